import { Column, Entity, ForeignKey, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * What a gateway reported about an update, once per (device, ts, type). The migration orders the
 * history index `ts DESC, id DESC` for the newest-first page; TypeORM indexes carry no sort order
 * and its diff compares only the columns, so the order lives in the migration.
 */
@Entity({ name: 'ota_events' })
@Index('ota_events_identity_key', ['deviceId', 'ts', 'type'], { unique: true })
@Index('ota_events_history_idx', ['deviceId', 'ts', 'id'])
export class OtaEventRecord {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS', primaryKeyConstraintName: 'ota_events_pkey' })
  id!: string;

  @Column({ name: 'device_id', type: 'varchar', length: 64 })
  @ForeignKey('devices', { name: 'ota_events_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @Column({ type: 'timestamptz' })
  ts!: Date;

  @Column({ type: 'varchar', length: 32 })
  type!: string;

  @Column({ name: 'from_version', type: 'varchar', length: 64, nullable: true })
  fromVersion!: string | null;

  @Column({ name: 'to_version', type: 'varchar', length: 64, nullable: true })
  toVersion!: string | null;

  @Column({ name: 'progress_pct', type: 'smallint', nullable: true })
  progressPct!: number | null;

  @Column({ name: 'error_code', type: 'varchar', length: 64, nullable: true })
  errorCode!: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  message!: string | null;

  @Column({ name: 'received_at', type: 'timestamptz' })
  receivedAt!: Date;
}
