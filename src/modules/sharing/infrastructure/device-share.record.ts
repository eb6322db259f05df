import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { ShareRole } from '../domain/device-share.js';

/**
 * A device shared with an e-mail address. `userId` is null until an account with that address is
 * verified; the share counts only while `grantedBy` still owns the device (SHARED_WITH, sql-api.ts).
 */
@Entity({ name: 'device_shares' })
@Check('device_shares_role_check', "role IN ('viewer', 'installer')")
@Index('device_shares_device_id_email_key', ['deviceId', 'email'], { unique: true })
@Index('device_shares_user_idx', ['userId', 'deviceId'], { where: 'user_id IS NOT NULL' })
@Index('device_shares_pending_idx', ['email'], { where: 'user_id IS NULL' })
@Index('device_shares_granted_by_idx', ['grantedBy'])
export class DeviceShareRecord {
  @PrimaryColumn({ name: 'share_id', type: 'uuid', primaryKeyConstraintName: 'device_shares_pkey' })
  shareId!: string;

  @Column({ name: 'device_id', type: 'varchar', length: 64 })
  @ForeignKey('devices', { name: 'device_shares_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @Column({ name: 'granted_by', type: 'uuid' })
  @ForeignKey('users', { name: 'device_shares_granted_by_fkey', onDelete: 'CASCADE' })
  grantedBy!: string;

  /** Trimmed and lower-cased, as accounts compare addresses. */
  @Column({ type: 'varchar', length: 254 })
  email!: string;

  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  @ForeignKey('users', { name: 'device_shares_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string | null;

  @Column({ type: 'varchar', length: 9 })
  role!: ShareRole;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
