import type { InMemoryRefreshTokenStore } from '../shared/in-memory-refresh-token-store.js';
import { User, type UserState } from '../../../src/modules/accounts/domain/user.js';
import { UserRepository, type TransactionRunner } from '../../../src/modules/accounts/domain/user.repository.js';

/** There is no SQL here: a fake outbox given this transaction must not use it. */
const NO_SQL: TransactionRunner = {
  rows: () => Promise.reject(new Error('the in-memory repository has no SQL transaction')),
};

interface VerificationToken {
  userId: string;
  expiresAt: Date;
  usedAt: Date | null;
}

/**
 * UserRepository for unit tests. Stores copies of the state, as a database would, keeps the e-mail
 * unique like the users_email_key index, and consumes a verification token at most once.
 */
export class InMemoryUserRepository extends UserRepository {
  private readonly users = new Map<string, UserState>();
  private readonly verificationTokens = new Map<string, VerificationToken>();
  private readonly resetTokens = new Map<string, { userId: string; expiresAt: Date }>();

  /** `refreshTokens`: where sessions live, as user_refresh_tokens does for the SQL repository. */
  constructor(private readonly refreshTokens: InMemoryRefreshTokenStore) {
    super();
  }

  async findById(id: string): Promise<User | null> {
    const state = this.users.get(id);
    return state ? User.restore(state) : null;
  }

  async findInSession(id: string, sessionId: string): Promise<User | null> {
    const live = this.refreshTokens.of(id).some((token) => token.familyId === sessionId && token.revokedAt === null);
    return live ? this.findById(id) : null;
  }

  async findByEmail(email: string): Promise<User | null> {
    const state = this.byEmail(email);
    return state ? User.restore(state) : null;
  }

  async insertIfEmailFree(user: User, withInsert?: (tx: TransactionRunner) => Promise<void>): Promise<boolean> {
    if (this.byEmail(user.email)) return false;
    this.users.set(user.id, user.toState());
    try {
      await withInsert?.(NO_SQL);
    } catch (error) {
      this.users.delete(user.id); // rolled back with the transaction
      throw error;
    }
    return true;
  }

  async save(user: User): Promise<void> {
    const state = user.toState();
    const existing = this.users.get(state.id);
    if (existing) this.users.set(state.id, { ...state, createdAt: existing.createdAt });
  }

  async replacePasswordHash(id: string, previous: string, next: string): Promise<void> {
    const existing = this.users.get(id);
    if (existing?.passwordHash === previous) this.users.set(id, { ...existing, passwordHash: next });
  }

  async insertVerificationToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void> {
    if (this.verificationTokens.has(token.tokenHash)) throw new Error('duplicate verification token hash');
    this.verificationTokens.set(token.tokenHash, { userId: token.userId, expiresAt: token.expiresAt, usedAt: null });
  }

  async consumeVerificationToken(tokenHash: string, now: Date): Promise<string | null> {
    const token = this.verificationTokens.get(tokenHash);
    if (!token || token.usedAt !== null || token.expiresAt <= now) return null;
    token.usedAt = now;
    return token.userId;
  }

  async replacePasswordResetToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void> {
    this.dropResetTokensOf(token.userId);
    this.resetTokens.set(token.tokenHash, { userId: token.userId, expiresAt: token.expiresAt });
  }

  async findByPasswordResetToken(tokenHash: string, now: Date): Promise<User | null> {
    const token = this.resetTokens.get(tokenHash);
    return token && token.expiresAt > now ? this.findById(token.userId) : null;
  }

  async resetPassword(tokenHash: string, passwordHash: string, now: Date): Promise<string | null> {
    const token = this.resetTokens.get(tokenHash);
    const existing = token && this.users.get(token.userId);
    if (!token || token.expiresAt <= now || !existing) return null;
    this.dropResetTokensOf(token.userId);
    this.users.set(existing.id, { ...existing, passwordHash, tokenVersion: existing.tokenVersion + 1, emailVerifiedAt: existing.emailVerifiedAt ?? now });
    await this.refreshTokens.revokeAllOf(existing.id, now);
    return existing.id;
  }

  async changePassword(id: string, passwordHash: string, keepSessionId: string | null, now: Date): Promise<void> {
    const existing = this.users.get(id);
    if (!existing) return;
    this.users.set(id, { ...existing, passwordHash });
    for (const token of this.refreshTokens.tokens.values()) if (token.subjectId === id && token.familyId !== keepSessionId && !token.revokedAt) token.revokedAt = now;
    this.dropResetTokensOf(id);
  }

  async deleteAccount(id: string, beforeDelete: (tx: TransactionRunner) => Promise<void>): Promise<boolean> {
    if (!this.users.has(id)) return false;
    await beforeDelete(NO_SQL);
    // What ON DELETE CASCADE takes along in the database.
    this.users.delete(id);
    this.dropResetTokensOf(id);
    for (const [hash, token] of this.verificationTokens) if (token.userId === id) this.verificationTokens.delete(hash);
    for (const [key, token] of this.refreshTokens.tokens) if (token.subjectId === id) this.refreshTokens.tokens.delete(key);
    return true;
  }

  /** Hashes of the stored reset tokens, for assertions. */
  resetTokenHashes(): string[] {
    return [...this.resetTokens.keys()];
  }

  /** Hashes of the stored verification tokens, for assertions. */
  verificationTokenHashes(): string[] {
    return [...this.verificationTokens.keys()];
  }

  /** Every stored account, for assertions. */
  all(): UserState[] {
    return [...this.users.values()].map((state) => ({ ...state }));
  }

  private dropResetTokensOf(userId: string): void {
    for (const [hash, token] of this.resetTokens) if (token.userId === userId) this.resetTokens.delete(hash);
  }

  private byEmail(email: string): UserState | undefined {
    return [...this.users.values()].find((state) => state.email === email);
  }
}
