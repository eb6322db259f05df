import { Check, Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import type { LogLevel } from '../domain/device-log.js';

/**
 * One log line of a gateway. The table is partitioned by day on `ts` (migration DeviceLogs;
 * DeviceLogPartitions adds and drops the days), which TypeORM cannot declare: its diff reads the
 * parent like a plain table and leaves the partitions alone, as for telemetry. No foreign key to
 * devices, like telemetry: a partitioned table's rows go with their partition.
 */
@Entity({ name: 'device_logs' })
@Check('device_logs_level_check', "level IN ('error', 'warn', 'info', 'debug', 'verbose')")
export class DeviceLogRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'device_logs_pkey' })
  deviceId!: string;

  @PrimaryColumn({ type: 'timestamptz', primaryKeyConstraintName: 'device_logs_pkey' })
  ts!: Date;

  /** Of level, tag and message: a retried line is the same row. */
  @PrimaryColumn({ name: 'line_hash', type: 'bigint', primaryKeyConstraintName: 'device_logs_pkey' })
  lineHash!: string;

  @Column({ type: 'varchar', length: 7 })
  level!: LogLevel;

  @Column({ type: 'varchar', length: 32, nullable: true })
  tag!: string | null;

  @Column({ type: 'text' })
  message!: string;

  @Column({ name: 'received_at', type: 'timestamptz' })
  receivedAt!: Date;
}

/** The bytes of log lines a device stored on one UTC day, against LOG_BYTES_PER_DEVICE_PER_DAY. */
@Entity({ name: 'device_log_usage' })
export class DeviceLogUsageRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'device_log_usage_pkey' })
  @ForeignKey('devices', { name: 'device_log_usage_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @PrimaryColumn({ type: 'date', primaryKeyConstraintName: 'device_log_usage_pkey' })
  day!: string;

  @Column({ type: 'bigint' })
  bytes!: string;
}
