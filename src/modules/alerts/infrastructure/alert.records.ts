import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { AlertRule } from '../domain/alert-rule.js';

/** A device's own alert rules; a device without a row follows the fleet defaults. */
@Entity({ name: 'alert_rules' })
export class AlertRuleSetRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'alert_rules_pkey' })
  @ForeignKey('devices', { name: 'alert_rules_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @Column({ type: 'jsonb' })
  rules!: AlertRule[];

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** The fleet defaults an administrator set (one row, id 1); without it the shipped defaults apply. */
@Entity({ name: 'alert_rule_defaults' })
export class AlertRuleDefaultsRecord {
  @PrimaryColumn({ type: 'smallint', primaryKeyConstraintName: 'alert_rule_defaults_pkey' })
  id!: number;

  @Column({ type: 'jsonb' })
  rules!: AlertRule[];

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/**
 * A series (device, battery, rule) while something is going on: a breach is running or an alert
 * is open. A series without a row is quiet; the device's newest record time stands in for its
 * watermark (src/modules/alerts/application/alert-monitor.ts).
 */
@Entity({ name: 'alert_series' })
export class AlertSeriesRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'alert_series_pkey' })
  @ForeignKey('devices', { name: 'alert_series_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'alert_series_pkey' })
  batteryId!: string;

  @PrimaryColumn({ name: 'rule_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'alert_series_pkey' })
  ruleId!: string;

  @Column({ type: 'timestamptz', nullable: true })
  watermark!: Date | null;

  @Column({ name: 'breaching_since', type: 'timestamptz', nullable: true })
  breachingSince!: Date | null;

  @Column({ name: 'open_alert_id', type: 'uuid', nullable: true })
  openAlertId!: string | null;
}

@Entity({ name: 'alerts' })
@Index('alerts_device_idx', ['deviceId', 'openedAt', 'alertId'])
export class AlertRecord {
  @PrimaryColumn({ name: 'alert_id', type: 'uuid', primaryKeyConstraintName: 'alerts_pkey' })
  alertId!: string;

  @Column({ name: 'device_id', type: 'varchar', length: 64 })
  @ForeignKey('devices', { name: 'alerts_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @Column({ name: 'battery_id', type: 'varchar', length: 64 })
  batteryId!: string;

  @Column({ name: 'rule_id', type: 'varchar', length: 64 })
  ruleId!: string;

  @Column({ type: 'varchar', length: 64 })
  metric!: string;

  @Column({ type: 'varchar', length: 8 })
  op!: string;

  @Column({ type: 'float8' })
  threshold!: number;

  @Column({ name: 'clear_at', type: 'float8' })
  clearAt!: number;

  /** The value that opened it. */
  @Column({ type: 'float8' })
  value!: number;

  @Column({ type: 'varchar', length: 16 })
  state!: string;

  @Column({ name: 'opened_at', type: 'timestamptz' })
  openedAt!: Date;

  @Column({ name: 'acknowledged_at', type: 'timestamptz', nullable: true })
  acknowledgedAt!: Date | null;

  @Column({ name: 'acknowledged_by', type: 'uuid', nullable: true })
  acknowledgedBy!: string | null;

  @Column({ name: 'resolved_at', type: 'timestamptz', nullable: true })
  resolvedAt!: Date | null;

  @Column({ name: 'resolved_value', type: 'float8', nullable: true })
  resolvedValue!: number | null;
}
