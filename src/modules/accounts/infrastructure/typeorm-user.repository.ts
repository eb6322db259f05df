import { Injectable } from '@nestjs/common';
import { IsNull, MoreThan } from 'typeorm';
import { Orm } from '../../../shared/database/orm.js';
import { User } from '../domain/user.js';
import { UserRepository, type TransactionRunner } from '../domain/user.repository.js';
import { SqlSessionUsers } from './sql-session-users.js';
import { EmailVerificationTokenRecord, PasswordResetTokenRecord, UserRecord } from './user.record.js';

function toDomain(record: UserRecord): User {
  return User.restore({
    id: record.id,
    email: record.email,
    passwordHash: record.passwordHash,
    role: record.role,
    emailVerifiedAt: record.emailVerifiedAt,
    tokenVersion: record.tokenVersion,
    createdAt: record.createdAt,
    alertEmails: record.alertEmails,
  });
}

function toRecord(user: User): UserRecord {
  const state = user.toState();
  return Object.assign(new UserRecord(), {
    id: state.id,
    email: state.email,
    passwordHash: state.passwordHash,
    role: state.role,
    emailVerifiedAt: state.emailVerifiedAt,
    tokenVersion: state.tokenVersion,
    createdAt: state.createdAt,
    alertEmails: state.alertEmails,
  });
}

/** Accounts and e-mail verification on TypeORM (cold paths); the guard's per-request read is SqlSessionUsers. */
@Injectable()
export class TypeOrmUserRepository extends UserRepository {
  constructor(
    private readonly orm: Orm,
    private readonly sessionUsers: SqlSessionUsers,
  ) {
    super();
  }

  async findById(id: string): Promise<User | null> {
    const record = await this.orm.run((manager) => manager.findOneBy(UserRecord, { id }));
    return record ? toDomain(record) : null;
  }

  async findInSession(id: string, sessionId: string): Promise<User | null> {
    const record = await this.sessionUsers.find(id, sessionId);
    return record ? toDomain(record) : null;
  }

  async findByEmail(email: string): Promise<User | null> {
    const record = await this.orm.run((manager) => manager.findOneBy(UserRecord, { email }));
    return record ? toDomain(record) : null;
  }

  async insertIfEmailFree(user: User, withInsert?: (tx: TransactionRunner) => Promise<void>): Promise<boolean> {
    // ON CONFLICT DO NOTHING: the unique index users_email_key decides atomically between two sign-ups.
    return this.orm.transaction(async (manager, tx) => {
      const result = await manager.createQueryBuilder().insert().into(UserRecord).values(toRecord(user)).orIgnore().returning('id').updateEntity(false).execute();
      const inserted = (result.raw as unknown[]).length === 1;
      if (inserted && withInsert) await withInsert(tx);
      return inserted;
    });
  }

  async save(user: User): Promise<void> {
    const state = user.toState();
    // Token version and verification only move forward, so a concurrent save of an older copy
    // cannot undo a revocation or a verification.
    await this.orm.run((manager) =>
      manager
        .createQueryBuilder()
        .update(UserRecord)
        .set({
          email: state.email,
          passwordHash: state.passwordHash,
          role: state.role,
          alertEmails: state.alertEmails,
          emailVerifiedAt: () => 'COALESCE(email_verified_at, :emailVerifiedAt)',
          tokenVersion: () => 'GREATEST(token_version, :tokenVersion)',
        })
        .where({ id: state.id })
        .setParameters({ emailVerifiedAt: state.emailVerifiedAt, tokenVersion: state.tokenVersion })
        .updateEntity(false)
        .execute(),
    );
  }

  async replacePasswordHash(id: string, previous: string, next: string): Promise<void> {
    await this.orm.run((manager) => manager.update(UserRecord, { id, passwordHash: previous }, { passwordHash: next }));
  }

  async insertVerificationToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void> {
    await this.orm.run((manager) =>
      manager.createQueryBuilder().insert().into(EmailVerificationTokenRecord).values({ tokenHash: token.tokenHash, userId: token.userId, expiresAt: token.expiresAt }).updateEntity(false).execute(),
    );
  }

  async consumeVerificationToken(tokenHash: string, now: Date): Promise<string | null> {
    // One conditional UPDATE: of two concurrent uses of a token, exactly one finds it unused.
    const result = await this.orm.run((manager) =>
      manager
        .createQueryBuilder()
        .update(EmailVerificationTokenRecord)
        .set({ usedAt: now })
        .where({ tokenHash, usedAt: IsNull(), expiresAt: MoreThan(now) })
        .returning('user_id')
        .updateEntity(false)
        .execute(),
    );
    const rows = result.raw as { user_id: string }[];
    return rows[0]?.user_id ?? null;
  }

  async replacePasswordResetToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void> {
    await this.orm.transaction(async (_manager, tx) => {
      await tx.rows('DELETE FROM password_reset_tokens WHERE user_id = $1', [token.userId]);
      await tx.rows('INSERT INTO password_reset_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [token.tokenHash, token.userId, token.expiresAt]);
    });
  }

  async findByPasswordResetToken(tokenHash: string, now: Date): Promise<User | null> {
    const record = await this.orm.run((manager) =>
      manager
        .createQueryBuilder(UserRecord, 'u')
        .innerJoin(PasswordResetTokenRecord, 't', 't.userId = u.id')
        .where('t.tokenHash = :tokenHash AND t.expiresAt > :now', { tokenHash, now })
        .getOne(),
    );
    return record ? toDomain(record) : null;
  }

  async resetPassword(tokenHash: string, passwordHash: string, now: Date): Promise<string | null> {
    return this.orm.transaction(async (_manager, tx) => {
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
    await this.orm.transaction(async (_manager, tx) => {
      await tx.rows('UPDATE users SET password_hash = $2 WHERE id = $1', [id, passwordHash]);
      await tx.rows('UPDATE user_refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL AND family_id IS DISTINCT FROM $3', [id, now, keepSessionId]);
      await tx.rows('DELETE FROM password_reset_tokens WHERE user_id = $1', [id]);
    });
  }

  async deleteAccount(id: string, beforeDelete: (tx: TransactionRunner) => Promise<void>): Promise<boolean> {
    return this.orm.transaction(async (_manager, tx) => {
      // The row locked first: a concurrent deletion of the same account waits here, then finds nothing.
      const [locked] = await tx.rows<{ id: string }>('SELECT id FROM users WHERE id = $1 FOR UPDATE', [id]);
      if (!locked) return false;
      await beforeDelete(tx);
      await tx.rows('DELETE FROM users WHERE id = $1', [id]);
      return true;
    });
  }
}
