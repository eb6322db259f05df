import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/**
 * One battery's metrics at one instant, as a gateway uploaded them. The table is partitioned by
 * month on `ts` (migration Telemetry1763760000000; TelemetryPartitionStore adds and drops the months).
 * TypeORM cannot declare partitioning: its schema diff reads the partitioned parent like a plain
 * table (columns, primary key) and leaves the monthly partitions alone because no record names
 * them, so the diff stays empty; a table generated from this record would not be partitioned.
 */
@Entity({ name: 'telemetry' })
export class TelemetryReadingRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'telemetry_pkey' })
  deviceId!: string;

  @PrimaryColumn({ type: 'timestamptz', primaryKeyConstraintName: 'telemetry_pkey' })
  ts!: Date;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'telemetry_pkey' })
  batteryId!: string;

  @Column({ type: 'jsonb' })
  metrics!: Record<string, number>;

  @Column({ name: 'received_at', type: 'timestamptz', default: () => 'now()' })
  receivedAt!: Date;
}

/**
 * Columns of every rollup level: one metric of one battery summed over one bucket. Shared, so the
 * primary-key name is TypeORM's here and <table>_pkey in the migrations (TypeORM does not compare it).
 */
abstract class RollupColumns {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64 })
  deviceId!: string;

  /** The bucket's start, aligned to the Unix epoch. */
  @PrimaryColumn({ type: 'timestamptz' })
  bucket!: Date;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64 })
  batteryId!: string;

  @PrimaryColumn({ type: 'varchar', length: 40 })
  metric!: string;

  @Column({ type: 'integer' })
  count!: number;

  @Column({ type: 'double precision' })
  sum!: number;

  @Column({ type: 'double precision' })
  min!: number;

  @Column({ type: 'double precision' })
  max!: number;
}

@Entity({ name: 'telemetry_rollup_5m' })
@Index('telemetry_rollup_5m_bucket_idx', ['bucket'])
export class TelemetryRollup5mRecord extends RollupColumns {}

@Entity({ name: 'telemetry_rollup_1h' })
@Index('telemetry_rollup_1h_bucket_idx', ['bucket'])
export class TelemetryRollup1hRecord extends RollupColumns {}

@Entity({ name: 'telemetry_rollup_6h' })
@Index('telemetry_rollup_6h_bucket_idx', ['bucket'])
export class TelemetryRollup6hRecord extends RollupColumns {}

@Entity({ name: 'telemetry_rollup_1d' })
@Index('telemetry_rollup_1d_bucket_idx', ['bucket'])
export class TelemetryRollup1dRecord extends RollupColumns {}

/**
 * The five-minute rollup of one battery's settled UTC day, as arrays of 288 slots per metric
 * (migration TelemetryDays1764002700000 describes them; compaction.sql.ts writes them).
 */
@Entity({ name: 'telemetry_days' })
export class TelemetryDayRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'telemetry_days_pkey' })
  deviceId!: string;

  /** The day's midnight, UTC. */
  @PrimaryColumn({ type: 'timestamptz', primaryKeyConstraintName: 'telemetry_days_pkey' })
  day!: Date;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'telemetry_days_pkey' })
  batteryId!: string;

  @Column({ type: 'text', array: true })
  metrics!: string[];

  @Column({ name: 'slot_count', type: 'integer', array: true })
  slotCount!: number[];

  @Column({ name: 'slot_sum', type: 'double precision', array: true })
  slotSum!: Array<number | null>;

  @Column({ name: 'slot_min', type: 'double precision', array: true })
  slotMin!: Array<number | null>;

  @Column({ name: 'slot_max', type: 'double precision', array: true })
  slotMax!: Array<number | null>;
}

/**
 * The settled records of one battery's UTC hour, as arrays (migrations TelemetryDays1764002700000
 * and TelemetryHours1764002800000 describe them; compaction.sql.ts writes them).
 */
@Entity({ name: 'telemetry_hours' })
export class TelemetryHourRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'telemetry_hours_pkey' })
  deviceId!: string;

  /** The hour's start, UTC. */
  @PrimaryColumn({ type: 'timestamptz', primaryKeyConstraintName: 'telemetry_hours_pkey' })
  hour!: Date;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'telemetry_hours_pkey' })
  batteryId!: string;

  @Column({ type: 'text', array: true })
  metrics!: string[];

  @Column({ type: 'double precision', array: true })
  divisors!: Array<number | null>;

  @Column({ type: 'double precision', array: true })
  bases!: Array<number | null>;

  @Column({ type: 'integer', array: true })
  records!: number[];

  @Column({ type: 'smallint', array: true })
  slots!: number[];

  @Column({ type: 'integer', array: true })
  offsets!: number[];

  @Column({ type: 'double precision', array: true })
  vals!: Array<number | null>;
}

/** Each battery's newest value of each metric, for the device list and the dashboard's cards. */
@Entity({ name: 'device_latest_metrics' })
export class DeviceLatestMetricRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'device_latest_metrics_pkey' })
  @ForeignKey('devices', { name: 'device_latest_metrics_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'device_latest_metrics_pkey' })
  batteryId!: string;

  @PrimaryColumn({ type: 'varchar', length: 40, primaryKeyConstraintName: 'device_latest_metrics_pkey' })
  metric!: string;

  @Column({ type: 'timestamptz' })
  ts!: Date;

  @Column({ type: 'double precision' })
  value!: number;
}
