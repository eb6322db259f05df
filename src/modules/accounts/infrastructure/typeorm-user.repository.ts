import { Injectable } from '@nestjs/common';
import { IsNull, MoreThan } from 'typeorm';
import { Orm } from '../../../shared/database/orm.js';
import { User } from '../domain/user.js';
import { UserRepository, type TransactionRunner } from '../domain/user.repository.js';
import { SqlSessionUsers } from './sql-session-users.js';
import { EmailVerificationTokenRecord, UserRecord } from './user.record.js';

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
}
