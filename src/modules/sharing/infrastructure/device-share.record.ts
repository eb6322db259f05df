import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { ShareRole } from '../domain/device-share.js';

/**
 * A device shared with an e-mail address or with an organization (all its members). `userId` is
 * null until an account with that address is verified; the share counts only while `grantedBy`
 * still owns the device (SHARED_WITH, sql-api.ts).
 */
@Entity({ name: 'device_shares' })
@Check('device_shares_role_check', "role IN ('viewer', 'installer')")
@Check('device_shares_recipient_check', '(email IS NULL) <> (organization_id IS NULL)')
@Index('device_shares_device_id_email_key', ['deviceId', 'email'], { unique: true })
@Index('device_shares_device_id_organization_id_key', ['deviceId', 'organizationId'], { unique: true })
@Index('device_shares_organization_idx', ['organizationId'], { where: 'organization_id IS NOT NULL' })
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

  /** Trimmed and lower-cased, as accounts compare addresses; null for a share with an organization. */
  @Column({ type: 'varchar', length: 254, nullable: true })
  email!: string | null;

  /** The organization shared with, whose every bound member holds the share; null for a share with an address. */
  @Column({ name: 'organization_id', type: 'uuid', nullable: true })
  @ForeignKey('organizations', { name: 'device_shares_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId!: string | null;

  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  @ForeignKey('users', { name: 'device_shares_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string | null;

  @Column({ type: 'varchar', length: 9 })
  role!: ShareRole;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
