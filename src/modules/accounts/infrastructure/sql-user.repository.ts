import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { User } from '../domain/user.js';
import { UserRepository, type TransactionRunner } from '../domain/user.repository.js';
import { SqlSessionUsers, toUser, USER_COLUMNS, type UserRow } from './sql-session-users.js';

/** Accounts, e-mail verification and password resets (cold paths); the guard's per-request read is SqlSessionUsers. */
@Injectable()
export class SqlUserRepository extends UserRepository {
  constructor(
    private readonly sql: Sql,
    private readonly sessionUsers: SqlSessionUsers,
  ) {
    super();
  }

  async findById(id: string): Promise<User | null> {
    const [row] = await this.sql.rows<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
    return row ? toUser(row) : null;
  }

  findInSession(id: string, sessionId: string): Promise<User | null> {
    return this.sessionUsers.find(id, sessionId);
  }

  async findByEmail(email: string): Promise<User | null> {
    const [row] = await this.sql.rows<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE email = $1`, [email]);
    return row ? toUser(row) : null;
  }

  async insertIfEmailFree(user: User, withInsert?: (tx: TransactionRunner) => Promise<void>): Promise<boolean> {
    const state = user.toState();
    // ON CONFLICT DO NOTHING: the unique index users_email_key decides atomically between two sign-ups.
    return this.sql.transaction(async (tx) => {
      const inserted = await tx.rows<{ id: string }>(
        `INSERT INTO users (${USER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING id`,
        [state.id, state.email, state.passwordHash, state.role, state.emailVerifiedAt, state.tokenVersion, state.createdAt, state.alertEmails],
      );
      if (inserted.length === 1 && withInsert) await withInsert(tx);
      return inserted.length === 1;
    });
  }

  async save(user: User): Promise<void> {
    const state = user.toState();
    // Token version and verification only move forward, so a concurrent save of an older copy
    // cannot undo a revocation or a verification.
    await this.sql.rows(
      `UPDATE users SET email = $2, password_hash = $3, role = $4, alert_emails = $5,
              email_verified_at = COALESCE(email_verified_at, $6), token_version = GREATEST(token_version, $7)
        WHERE id = $1`,
      [state.id, state.email, state.passwordHash, state.role, state.alertEmails, state.emailVerifiedAt, state.tokenVersion],
    );
  }

  async replacePasswordHash(id: string, previous: string, next: string): Promise<void> {
    await this.sql.rows('UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash = $2', [id, previous, next]);
  }

  async insertVerificationToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void> {
    await this.sql.rows('INSERT INTO email_verification_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [token.tokenHash, token.userId, token.expiresAt]);
  }

  async consumeVerificationToken(tokenHash: string, now: Date): Promise<string | null> {
    // One conditional UPDATE: of two concurrent uses of a token, exactly one finds it unused.
    const [row] = await this.sql.rows<{ user_id: string }>(
      'UPDATE email_verification_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id',
      [tokenHash, now],
    );
    return row?.user_id ?? null;
  }

  async replacePasswordResetToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void> {
    await this.sql.transaction(async (tx) => {
      await tx.rows('DELETE FROM password_reset_tokens WHERE user_id = $1', [token.userId]);
      await tx.rows('INSERT INTO password_reset_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [token.tokenHash, token.userId, token.expiresAt]);
    });
  }

  async findByPasswordResetToken(tokenHash: string, now: Date): Promise<User | null> {
    const [row] = await this.sql.rows<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users WHERE id = (SELECT user_id FROM password_reset_tokens WHERE token_hash = $1 AND expires_at > $2)`,
      [tokenHash, now],
    );
    return row ? toUser(row) : null;
  }

  async resetPassword(tokenHash: string, passwordHash: string, now: Date): Promise<string | null> {
    return this.sql.transaction(async (tx) => {
      // The DELETE decides: of two uses of one token, exactly one finds its row.
      const [used] = await tx.rows<{ user_id: string }>('DELETE FROM password_reset_tokens WHERE token_hash = $1 AND expires_at > $2 RETURNING user_id', [tokenHash, now]);
      if (!used) return null;
      await tx.rows('DELETE FROM password_reset_tokens WHERE user_id = $1', [used.user_id]);
      await tx.rows('UPDATE users SET password_hash = $2, token_version = token_version + 1, email_verified_at = COALESCE(email_verified_at, $3) WHERE id = $1', [used.user_id, passwordHash, now]);
      await tx.rows('UPDATE user_refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL', [used.user_id, now]);
      return used.user_id;
    });
  }

  async changePassword(id: string, passwordHash: string, keepSessionId: string | null, now: Date): Promise<void> {
    await this.sql.transaction(async (tx) => {
      await tx.rows('UPDATE users SET password_hash = $2 WHERE id = $1', [id, passwordHash]);
      await tx.rows('UPDATE user_refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL AND family_id IS DISTINCT FROM $3', [id, now, keepSessionId]);
      await tx.rows('DELETE FROM password_reset_tokens WHERE user_id = $1', [id]);
    });
  }

  async deleteAccount(id: string, beforeDelete: (tx: TransactionRunner) => Promise<void>): Promise<boolean> {
    return this.sql.transaction(async (tx) => {
      // The row locked first: a concurrent deletion of the same account waits here, then finds nothing.
      const [locked] = await tx.rows<{ id: string }>('SELECT id FROM users WHERE id = $1 FOR UPDATE', [id]);
      if (!locked) return false;
      await beforeDelete(tx);
      await tx.rows('DELETE FROM users WHERE id = $1', [id]);
      return true;
    });
  }
}
