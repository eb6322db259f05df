import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/**
 * A customer's or an organization's webhook endpoint. The signing secret is a key the service must use to sign, so it
 * cannot be hashed: it is stored encrypted (AES-256-GCM under a key derived from SECRET_PEPPER).
 */
@Entity({ name: 'webhooks' })
@Index('webhooks_user_idx', ['userId'])
@Index('webhooks_organization_idx', ['organizationId'], { where: 'organization_id IS NOT NULL' })
@Check('webhooks_holder_check', '(user_id IS NULL) <> (organization_id IS NULL)')
export class WebhookRecord {
  @PrimaryColumn({ name: 'webhook_id', type: 'uuid', primaryKeyConstraintName: 'webhooks_pkey' })
  webhookId!: string;

  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  @ForeignKey('users', { name: 'webhooks_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string | null;

  @Column({ name: 'organization_id', type: 'uuid', nullable: true })
  @ForeignKey('organizations', { name: 'webhooks_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId!: string | null;

  @Column({ type: 'text' })
  url!: string;

  /** Event types it receives; null: every type. */
  @Column({ type: 'text', array: true, nullable: true })
  types!: string[] | null;

  @Column({ name: 'secret_sealed', type: 'text' })
  secretSealed!: string;

  @Column({ type: 'boolean' })
  enabled!: boolean;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /** Since when every delivery failed; null after a success. */
  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince!: Date | null;

  @Column({ name: 'disabled_at', type: 'timestamptz', nullable: true })
  disabledAt!: Date | null;
}

/** Events waiting for the next e-mail digest of their owner. */
@Entity({ name: 'pending_notifications' })
export class PendingNotificationRecord {
  @PrimaryColumn({ name: 'user_id', type: 'uuid', primaryKeyConstraintName: 'pending_notifications_pkey' })
  @ForeignKey('users', { name: 'pending_notifications_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string;

  @PrimaryColumn({ name: 'event_id', type: 'bigint', primaryKeyConstraintName: 'pending_notifications_pkey' })
  @ForeignKey('device_events', { name: 'pending_notifications_event_id_fkey', onDelete: 'CASCADE' })
  eventId!: string;
}
