import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { Panic, ResetReason } from '../domain/crash-report.js';

/** One crash report (or reboot reason) of a gateway, as it first arrived: a retried report is the same row. */
@Entity({ name: 'device_crashes' })
@Index('device_crashes_signature_idx', ['signature', 'receivedAt'])
@Index('device_crashes_device_ts_idx', ['deviceId', 'ts'])
export class DeviceCrashRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'device_crashes_pkey' })
  @ForeignKey('devices', { name: 'device_crashes_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @PrimaryColumn({ name: 'crash_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'device_crashes_pkey' })
  crashId!: string;

  @Column({ type: 'timestamptz' })
  ts!: Date;

  @Column({ name: 'firmware_version', type: 'varchar', length: 40 })
  firmwareVersion!: string;

  @Column({ name: 'reset_reason', type: 'varchar', length: 16 })
  resetReason!: ResetReason;

  @Column({ name: 'uptime_sec', type: 'bigint' })
  uptimeSec!: string;

  @Column({ type: 'jsonb', nullable: true })
  panic!: Panic | null;

  /** The group's id: reset reason and top frames, hashed (domain/crash-report.ts). */
  @Column({ type: 'char', length: 16 })
  signature!: string;

  @Column({ name: 'received_at', type: 'timestamptz' })
  receivedAt!: Date;
}
