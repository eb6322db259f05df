import type { User } from './user.js';

import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/** Plain SQL in the repository's open transaction (what a job enqueued with the change needs). */
export type TransactionRunner = SqlRunner;

export abstract class UserRepository {
  abstract findById(id: string): Promise<User | null>;
  abstract findByEmail(email: string): Promise<User | null>;
  /** The user, when the session `sessionId` (a refresh-token family) still has a live token; else null. */
  abstract findInSession(id: string, sessionId: string): Promise<User | null>;
  /**
   * Inserts unless the e-mail is taken; false when it was. `withInsert` runs in the same
   * transaction after an insert (the verification mail's job), so both happen or neither.
   */
  abstract insertIfEmailFree(user: User, withInsert?: (tx: TransactionRunner) => Promise<void>): Promise<boolean>;
  abstract save(user: User): Promise<void>;
  /** The same password under new hash parameters: replaces `previous` only if it is still the stored hash. */
  abstract replacePasswordHash(id: string, previous: string, next: string): Promise<void>;

  abstract insertVerificationToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void>;
  /** Marks the token used if it is live; returns its user id, or null when unknown, used or expired. */
  abstract consumeVerificationToken(tokenHash: string, now: Date): Promise<string | null>;

  /** Stores the account's new reset link token; every older one of the account stops working. */
  abstract replacePasswordResetToken(token: { userId: string; tokenHash: string; expiresAt: Date }): Promise<void>;
  /** The account of a live (unused, unexpired) reset token; null otherwise. Uses nothing. */
  abstract findByPasswordResetToken(tokenHash: string, now: Date): Promise<User | null>;
  /**
   * At once, if the reset token is still live: uses it up (and every other of the account), sets
   * the new password hash, verifies the address (the link came by mail), bumps the token version
   * and revokes every session. Returns the account's id; null when the token was not live.
   */
  abstract resetPassword(tokenHash: string, passwordHash: string, now: Date): Promise<string | null>;
  /**
   * At once: the new password hash, every session revoked but `keepSessionId`'s (none kept when
   * null), and every reset link of the account void.
   */
  abstract changePassword(id: string, passwordHash: string, keepSessionId: string | null, now: Date): Promise<void>;
  /**
   * Deletes the account in one transaction: `beforeDelete` first (the modules' erasure steps), then
   * the row, which takes what references it with `ON DELETE CASCADE` along. False when it was gone.
   */
  abstract deleteAccount(id: string, beforeDelete: (tx: TransactionRunner) => Promise<void>): Promise<boolean>;
}
