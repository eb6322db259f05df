import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/** Where each device stands with each release it was offered or reported on. */
@Entity({ name: 'device_release_states' })
@Index('device_release_states_device_idx', ['deviceId'])
@Check('device_release_states_state_check', "state IN ('held_back', 'offered', 'downloading', 'installing', 'installed', 'failed', 'rolled_back')")
@Check('device_release_states_held_back_reason_check', "held_back_reason IN ('LOW_SOC', 'TEMPERATURE')")
export class DeviceReleaseStateRecord {
  @PrimaryColumn({ name: 'release_id', type: 'uuid', primaryKeyConstraintName: 'device_release_states_pkey' })
  @ForeignKey('firmware_releases', { name: 'device_release_states_release_id_fkey', onDelete: 'CASCADE' })
  releaseId!: string;

  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'device_release_states_pkey' })
  @ForeignKey('devices', { name: 'device_release_states_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @Column({ type: 'varchar', length: 16 })
  /** held_back: polls held the release back (battery) and it was never offered yet. */
  state!: 'held_back' | 'offered' | 'downloading' | 'installing' | 'installed' | 'failed' | 'rolled_back';

  @Column({ name: 'offered_at', type: 'timestamptz', nullable: true })
  offeredAt!: Date | null;

  /** The gateway's time of the event that set the state (later events win)… */
  @Column({ name: 'last_event_ts', type: 'timestamptz', nullable: true })
  lastEventTs!: Date | null;

  /** …and when it arrived. */
  @Column({ name: 'last_event_at', type: 'timestamptz', nullable: true })
  lastEventAt!: Date | null;

  /** Why the device's latest poll held the release back; null once it is offered. */
  @Column({ name: 'held_back_reason', type: 'varchar', length: 16, nullable: true })
  heldBackReason!: 'LOW_SOC' | 'TEMPERATURE' | null;

  @Column({ name: 'held_back_at', type: 'timestamptz', nullable: true })
  heldBackAt!: Date | null;
}
