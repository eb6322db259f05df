import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { User, type Role } from '../domain/user.js';
import { UserRepository } from '../domain/user.repository.js';

interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  role: Role;
  email_verified_at: Date | null;
  token_version: number;
  created_at: Date;
}

const USER_COLUMNS = 'id, email, password_hash, role, email_verified_at, token_version, created_at';

function toDomain(row: UserRow): User {
  return User.restore({
    id: row.id,
    email: row.email,
    passwordHash: row.password_hash,
    role: row.role,
    emailVerifiedAt: row.email_verified_at,
    tokenVersion: row.token_version,
    createdAt: row.created_at,
  });
}

function toParams(user: User): unknown[] {
  const state = user.toState();
  return [state.id, state.email, state.passwordHash, state.role, state.emailVerifiedAt, state.tokenVersion, state.createdAt];
}

@Injectable()
export class TypeOrmUserRepository extends UserRepository {
  constructor(private readonly sql: Sql) {
    super();
  }

  async findById(id: string): Promise<User | null> {
    const rows = await this.sql.rows<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id], 'user_by_id');
    return rows[0] ? toDomain(rows[0]) : null;
  }

  async findInSession(id: string, sessionId: string): Promise<User | null> {
    // The customer guard's one read per request: the session check rides along (partial index
    // user_refresh_tokens_live_family_idx).
    const rows = await this.sql.rows<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users
        WHERE id = $1 AND EXISTS (SELECT 1 FROM user_refresh_tokens t WHERE t.family_id = $2 AND t.user_id = users.id AND t.revoked_at IS NULL)`,
      [id, sessionId],
      'user_in_session',
    );
    return rows[0] ? toDomain(rows[0]) : null;
  }

  async findByEmail(email: string): Promise<User | null> {
    const rows = await this.sql.rows<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE email = $1`, [email]);
    return rows[0] ? toDomain(rows[0]) : null;
  }

  async insertIfEmailFree(user: User): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO users (${USER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (email) DO NOTHING RETURNING id`,
      toParams(user),
    );
    return rows.length === 1;
  }

  async save(user: User): Promise<void> {
    const state = user.toState();
    // Token version and verification only move forward, so a concurrent save of an older copy
    // cannot undo a revocation or a verification.
    await this.sql.rows(
      `UPDATE users SET email = $2, password_hash = $3, role = $4,
         email_verified_at = COALESCE(users.email_verified_at, $5), token_version = GREATEST(users.token_version, $6)
       WHERE id = $1`,
      [
      state.id,
      state.email,
      state.passwordHash,
      state.role,
      state.emailVerifiedAt,
      state.tokenVersion,
      ],
    );
  }

  async insertVerificationToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void> {
    await this.sql.rows('INSERT INTO email_verification_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [token.tokenHash, token.userId, token.expiresAt]);
  }

  async consumeVerificationToken(tokenHash: string, now: Date): Promise<string | null> {
    const rows = await this.sql.rows<{ user_id: string }>(
      'UPDATE email_verification_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id',
      [tokenHash, now],
    );
    return rows[0]?.user_id ?? null;
  }
}
