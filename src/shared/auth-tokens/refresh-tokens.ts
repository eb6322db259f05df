import { randomUUID } from 'node:crypto';
import { SecretHasher } from '../crypto/secret-hasher.js';
import { DomainError } from '../domain-error.js';
import type { RefreshTokenStore, StoredRefreshToken } from './refresh-token-store.js';

export class InvalidRefreshTokenError extends DomainError {
  constructor() {
    super('INVALID_TOKEN', 'unauthorized', 'The refresh token is not valid, expired, or was already used.');
  }
}

/** What owns the tokens (a device, a user): its current token version, and how to void them all. */
export interface TokenSubject {
  currentTokenVersion(subjectId: string): Promise<number | null>;
  /** Bumps the subject's token version, voiding its access tokens too. */
  revokeAllTokens(subjectId: string): Promise<void>;
}

export interface RotatedToken {
  subjectId: string;
  tokenVersion: number;
  /** The session (refresh-token family) the successor continues. */
  familyId: string;
  /** The successor of the presented token. */
  refreshToken: string;
  /** When the presented token was rotated: the successor's issue time, also for a repeat. */
  rotatedAt: Date;
}

export interface RefreshTokenPolicy {
  /** Makes a leaked token recognisable to secret scanners (dcr_ device, ucr_ user). */
  prefix: string;
  ttlDays: number;
  /** How long a repeat of a rotated token still gets its successor instead of reuse detection; 0: never. */
  reuseGraceSec: number;
}

/**
 * Opaque single-use refresh tokens, stored as HMACs. Rotation per RFC 9700: each use returns a
 * successor; presenting a token that was already rotated means two parties hold it, so every
 * token of the subject is voided. Except within the reuse grace (RFC 9700 §4.14.2): a client that
 * lost the answer to its refresh and repeats it gets the same successor again, as long as that
 * successor is unused. The successor is derived from the presented token under the pepper, so a
 * repeat can name it without the service storing any token.
 */
export class RefreshTokens {
  constructor(
    private readonly store: RefreshTokenStore,
    private readonly hasher: SecretHasher,
    private readonly policy: RefreshTokenPolicy,
  ) {}

  /** A token opening a session (login, registration); `familyId` names the session. */
  async issue(subjectId: string, tokenVersion: number, now: Date, familyId: string = randomUUID()): Promise<string> {
    const token = this.policy.prefix + SecretHasher.randomToken();
    await this.store.insert({ subjectId, tokenVersion, familyId, tokenHash: this.hasher.hmac(token), issuedAt: now, expiresAt: this.expiryFrom(now) });
    return token;
  }

  /**
   * Retires the presented token and returns its successor, for the token version the presented
   * token had, not for whatever the subject holds by then: when a concurrent request voided
   * everything (the version went up), the successor is born void too, on whichever instance.
   */
  async rotate(token: string, now: Date, subject: TokenSubject): Promise<RotatedToken> {
    let stored = await this.store.findByHash(this.hasher.hmac(token));
    if (!stored) throw new InvalidRefreshTokenError();
    const currentVersion = await subject.currentTokenVersion(stored.subjectId);
    if (currentVersion === null) throw new InvalidRefreshTokenError();
    // A dead token (revoked, expired, from an earlier version) is refused and nothing more: a
    // replay of an old stolen token must not be a way to log the owner out again and again.
    if (stored.revokedAt || stored.tokenVersion !== currentVersion || stored.expiresAt <= now) throw new InvalidRefreshTokenError();
    const successor = this.successorOf(token);
    if (!stored.rotatedAt) {
      if (await this.store.rotate(stored.id, { tokenHash: this.hasher.hmac(successor), expiresAt: this.expiryFrom(now) }, now)) {
        return this.rotated(stored, successor, now);
      }
      // A concurrent request rotated (or revoked) it first; its statement has committed by now.
      stored = await this.store.findByHash(this.hasher.hmac(token));
      if (!stored?.rotatedAt || stored.revokedAt) throw new InvalidRefreshTokenError();
    }
    if (await this.isRepeat(stored, stored.rotatedAt, successor, now)) return this.rotated(stored, successor, stored.rotatedAt);
    await this.voidAll(stored.subjectId, subject, now);
    throw new InvalidRefreshTokenError();
  }

  /** Logout: the token's session ends, every token of it; unknown tokens are ignored so logout is safe to retry. */
  revokeSession(token: string, now: Date): Promise<void> {
    return this.store.revokeFamilyOf(this.hasher.hmac(token), now);
  }

  revokeAllOf(subjectId: string, now: Date): Promise<void> {
    return this.store.revokeAllOf(subjectId, now);
  }

  /**
   * The immediately previous token within the grace: its successor is still unused. A token whose
   * successor was rotated in turn, or a repeat after the grace, is reuse.
   */
  private async isRepeat(stored: StoredRefreshToken, rotatedAt: Date, successor: string, now: Date): Promise<boolean> {
    // The grace counts from the rotation; a concurrent repeat may have started just before it.
    if (this.policy.reuseGraceSec <= 0 || now.getTime() - rotatedAt.getTime() > this.policy.reuseGraceSec * 1000) return false;
    const next = await this.store.findByHash(this.hasher.hmac(successor));
    return next !== null && next.familyId === stored.familyId && next.tokenVersion === stored.tokenVersion && !next.rotatedAt && !next.revokedAt && next.expiresAt > now;
  }

  private rotated(stored: StoredRefreshToken, successor: string, rotatedAt: Date): RotatedToken {
    return { subjectId: stored.subjectId, tokenVersion: stored.tokenVersion, familyId: stored.familyId, refreshToken: successor, rotatedAt };
  }

  private successorOf(token: string): string {
    return this.policy.prefix + this.hasher.derive(`successor:${token}`);
  }

  private expiryFrom(issuedAt: Date): Date {
    return new Date(issuedAt.getTime() + this.policy.ttlDays * 86_400_000);
  }

  private async voidAll(subjectId: string, subject: TokenSubject, now: Date): Promise<void> {
    await subject.revokeAllTokens(subjectId);
    await this.store.revokeAllOf(subjectId, now);
  }
}
