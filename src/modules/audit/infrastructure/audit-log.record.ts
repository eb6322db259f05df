import { Check, Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * The audit log: who (actor_*), what (action, target, detail), when (at), from where
 * (client_address). `owner_id` is the owner (an organization) of the device whose ownership the
 * entry belongs to, or the organization an entry about an organization belongs to: it decides what
 * an owner reads. No foreign keys: entries outlive accounts and keys.
 */
@Entity({ name: 'audit_log' })
@Check('audit_log_actor_kind_check', "actor_kind IN ('user', 'admin', 'system', 'device', 'organization')")
@Index('audit_log_device_idx', ['deviceId', 'id'])
@Index('audit_log_actor_idx', ['actorUserId', 'id'])
@Index('audit_log_at_idx', ['at'])
@Index('audit_log_owner_idx', ['ownerId', 'id'], { where: 'owner_id IS NOT NULL' })
export class AuditLogRecord {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'audit_log_pkey' })
  id!: string;

  @Column({ type: 'timestamptz' })
  at!: Date;

  @Column({ name: 'actor_kind', type: 'varchar', length: 12 })
  actorKind!: string;

  @Column({ name: 'actor_user_id', type: 'uuid', nullable: true })
  actorUserId!: string | null;

  @Column({ name: 'actor_api_key_id', type: 'uuid', nullable: true })
  actorApiKeyId!: string | null;

  @Column({ type: 'varchar', length: 48 })
  action!: string;

  @Column({ name: 'device_id', type: 'varchar', length: 64, nullable: true })
  deviceId!: string | null;

  @Column({ name: 'owner_id', type: 'uuid', nullable: true })
  ownerId!: string | null;

  @Column({ type: 'varchar', length: 200 })
  target!: string;

  @Column({ name: 'client_address', type: 'varchar', length: 64, nullable: true })
  clientAddress!: string | null;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  detail!: Record<string, unknown>;
}
