import { Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * The event log. `id` orders events as they were recorded (the dashboard's newest-first pages and
 * the stream's Last-Event-ID); `owner_id` is the owner when it happened, whom webhooks notify and
 * whose streams carry it. Trigger device_events_notify (migration LiveStream) names new events on
 * LISTEN/NOTIFY when their transaction commits.
 */
@Entity({ name: 'device_events' })
@Index('device_events_device_idx', ['deviceId', 'id'])
@Index('device_events_owner_idx', ['ownerId', 'id'])
export class DeviceEventRecord {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS', primaryKeyConstraintName: 'device_events_pkey' })
  id!: string;

  @Column({ type: 'varchar', length: 32 })
  type!: string;

  @Column({ name: 'device_id', type: 'varchar', length: 64 })
  @ForeignKey('devices', { name: 'device_events_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @Column({ name: 'owner_id', type: 'uuid', nullable: true })
  ownerId!: string | null;

  @Column({ name: 'occurred_at', type: 'timestamptz' })
  occurredAt!: Date;

  @Column({ type: 'jsonb' })
  data!: Record<string, unknown>;
}
