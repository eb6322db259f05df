import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { OrganizationRole } from '../domain/organization.js';

/**
 * A member of an organization, invited by e-mail address. `userId` is null until an account with
 * that address is verified.
 */
@Entity({ name: 'organization_members' })
@Check('organization_members_role_check', "role IN ('owner', 'admin', 'operator', 'viewer')")
@Index('organization_members_organization_id_email_key', ['organizationId', 'email'], { unique: true })
@Index('organization_members_organization_invited_idx', ['organizationId', 'invitedAt', 'memberId'])
@Index('organization_members_user_idx', ['userId', 'organizationId'], { where: 'user_id IS NOT NULL' })
@Index('organization_members_pending_idx', ['email'], { where: 'user_id IS NULL' })
export class OrganizationMemberRecord {
  @PrimaryColumn({ name: 'member_id', type: 'uuid', primaryKeyConstraintName: 'organization_members_pkey' })
  memberId!: string;

  @Column({ name: 'organization_id', type: 'uuid' })
  @ForeignKey('organizations', { name: 'organization_members_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId!: string;

  /** Trimmed and lower-cased, as accounts compare addresses. */
  @Column({ type: 'varchar', length: 254 })
  email!: string;

  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  @ForeignKey('users', { name: 'organization_members_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string | null;

  @Column({ type: 'varchar', length: 8 })
  role!: OrganizationRole;

  @Column({ name: 'invited_at', type: 'timestamptz' })
  invitedAt!: Date;

  /** The member's own choice: alert e-mails about the organization's devices (their role permitting). */
  @Column({ name: 'alert_emails', type: 'boolean', default: true })
  alertEmails!: boolean;
}
