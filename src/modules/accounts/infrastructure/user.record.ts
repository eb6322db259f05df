import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { RefreshTokenColumns } from '../../../shared/auth-tokens/refresh-token.columns.js';

@Entity({ name: 'users' })
export class UserRecord {
  @PrimaryColumn({ type: 'uuid' })
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
}

@Entity({ name: 'email_verification_tokens' })
export class EmailVerificationTokenRecord {
  @PrimaryColumn({ name: 'token_hash', type: 'varchar', length: 64 })
  tokenHash!: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt!: Date | null;
}

@Entity({ name: 'user_refresh_tokens' })
@Index('user_refresh_tokens_user_idx', ['userId'])
@Index('user_refresh_tokens_hash_key', ['tokenHash'], { unique: true })
@Index('user_refresh_tokens_live_family_idx', ['familyId'], { where: 'revoked_at IS NULL' })
export class UserRefreshTokenRecord extends RefreshTokenColumns {
  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;
}
