import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { RefreshTokenColumns } from '../../../shared/auth-tokens/refresh-token.columns.js';
import type { RefreshTokenTable } from '../../../shared/auth-tokens/sql-refresh-token.store.js';

@Entity({ name: 'users' })
@Check('users_role_check', "role IN ('customer', 'admin')")
export class UserRecord {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'users_pkey' })
  id!: string;

  @Index('users_email_key', { unique: true })
  @Column({ type: 'varchar', length: 254 })
  email!: string;

  @Column({ name: 'password_hash', type: 'text' })
  passwordHash!: string;

  @Column({ type: 'varchar', length: 16, default: 'customer' })
  role!: 'customer' | 'admin';

  @Column({ name: 'email_verified_at', type: 'timestamptz', nullable: true })
  emailVerifiedAt!: Date | null;

  @Column({ name: 'token_version', type: 'integer', default: 1 })
  tokenVersion!: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'alert_emails', type: 'boolean', default: true })
  alertEmails!: boolean;
}

@Entity({ name: 'email_verification_tokens' })
export class EmailVerificationTokenRecord {
  @PrimaryColumn({ name: 'token_hash', type: 'varchar', length: 64, primaryKeyConstraintName: 'email_verification_tokens_pkey' })
  tokenHash!: string;

  @Column({ name: 'user_id', type: 'uuid' })
  @ForeignKey(() => UserRecord, { name: 'email_verification_tokens_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt!: Date | null;
}

/** A password reset link's token, as its HMAC; used links are deleted, so every row is unused. */
@Entity({ name: 'password_reset_tokens' })
@Index('password_reset_tokens_user_idx', ['userId'])
export class PasswordResetTokenRecord {
  @PrimaryColumn({ name: 'token_hash', type: 'varchar', length: 64, primaryKeyConstraintName: 'password_reset_tokens_pkey' })
  tokenHash!: string;

  @Column({ name: 'user_id', type: 'uuid' })
  @ForeignKey(() => UserRecord, { name: 'password_reset_tokens_user_id_fkey', onDelete: 'CASCADE' })
  userId!: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}

@Entity({ name: 'user_refresh_tokens' })
@Index('user_refresh_tokens_user_idx', ['subjectId'])
@Index('user_refresh_tokens_hash_key', ['tokenHash'], { unique: true })
@Index('user_refresh_tokens_live_family_idx', ['familyId'], { where: 'revoked_at IS NULL' })
export class UserRefreshTokenRecord extends RefreshTokenColumns {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'user_refresh_tokens_pkey' })
  id!: string;

  @Column({ name: 'user_id', type: 'uuid' })
  @ForeignKey(() => UserRecord, { name: 'user_refresh_tokens_user_id_fkey', onDelete: 'CASCADE' })
  subjectId!: string;
}

/** UserRefreshTokenRecord's table, for SqlRefreshTokenStore. */
export const USER_REFRESH_TOKENS: RefreshTokenTable = { name: 'user_refresh_tokens', subjectColumn: 'user_id' };
