import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import type { ApiKeyScope } from '../../../auth/principals.js';

/** An account's or an organization's API key, by its keyed hash (never the key); gone with its holder. */
@Entity({ name: 'api_keys' })
@Check('api_keys_scope_check', "scope IN ('read', 'write')")
@Check('api_keys_holder_check', '(user_id IS NULL) <> (organization_id IS NULL)')
@Index('api_keys_key_hash_key', ['keyHash'], { unique: true })
@Index('api_keys_user_idx', ['userId', 'createdAt', 'keyId'])
@Index('api_keys_organization_idx', ['organizationId', 'createdAt', 'keyId'], { where: 'organization_id IS NOT NULL' })
export class ApiKeyRecord {
  @PrimaryColumn({ name: 'key_id', type: 'uuid', primaryKeyConstraintName: 'api_keys_pkey' })
  keyId!: string;

  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  @ForeignKey('users', { name: 'api_keys_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string | null;

  @Column({ name: 'organization_id', type: 'uuid', nullable: true })
  @ForeignKey('organizations', { name: 'api_keys_organization_id_fkey', onDelete: 'CASCADE' })
  organizationId!: string | null;

  @Column({ type: 'varchar', length: 100 })
  name!: string;

  @Column({ type: 'varchar', length: 5 })
  scope!: ApiKeyScope;

  /** SecretHasher.hmac of the key (hex). */
  @Column({ name: 'key_hash', type: 'varchar', length: 64 })
  keyHash!: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /** Written at most once a minute (LAST_USED_RESOLUTION_MS). */
  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt!: Date | null;
}
