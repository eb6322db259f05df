import { Check, Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { CommandState, CommandType } from '../domain/device-command.js';

/**
 * A command to one gateway and what became of it. `command_id` orders a device's commands as they
 * were sent. Trigger device_commands_announce_change (migration DeviceCommands, not expressible
 * here) announces every change on the change feed as `device_command:<device id>`.
 */
@Entity({ name: 'device_commands' })
@Check('device_commands_state_check', "state IN ('queued', 'delivered', 'succeeded', 'failed', 'rejected', 'expired', 'cancelled')")
@Index('device_commands_device_idx', ['deviceId', 'commandId'])
@Index('device_commands_pending_idx', ['deviceId', 'commandId'], { where: "state IN ('queued', 'delivered')" })
export class DeviceCommandRecord {
  @PrimaryGeneratedColumn('identity', { name: 'command_id', type: 'bigint', generatedIdentity: 'ALWAYS', primaryKeyConstraintName: 'device_commands_pkey' })
  commandId!: string;

  @Column({ name: 'device_id', type: 'varchar', length: 64 })
  @ForeignKey('devices', { name: 'device_commands_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @Column({ type: 'varchar', length: 16 })
  type!: CommandType;

  @Column({ type: 'jsonb' })
  params!: Record<string, unknown>;

  @Column({ type: 'varchar', length: 10 })
  state!: CommandState;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt!: Date | null;

  @Column({ type: 'integer', default: 0 })
  deliveries!: number;

  @Column({ name: 'accepted_at', type: 'timestamptz', nullable: true })
  acceptedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  output!: string | null;
}
