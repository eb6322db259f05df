import { SecretHasher } from '../crypto/secret-hasher.js';
import { DomainError } from '../domain-error.js';
import type { RefreshTokenStore } from './refresh-token-store.js';

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
}

export interface RefreshTokenPolicy {
  /** Makes a leaked token recognisable to secret scanners (dcr_ device, ucr_ user). */
  prefix: string;
  ttlDays: number;
}

/**
 * Opaque single-use refresh tokens, stored as HMACs. Rotation per RFC 9700: each use returns a
 * successor; presenting a token that was already rotated means two parties hold it, so every
 * token of the subject is voided.
 */
export class RefreshTokens {
  constructor(
    private readonly store: RefreshTokenStore,
    private readonly hasher: SecretHasher,
    private readonly policy: RefreshTokenPolicy,
  ) {}

  async issue(subjectId: string, tokenVersion: number, now: Date): Promise<string> {
    const token = this.policy.prefix + SecretHasher.randomToken();
    await this.store.insert({
      subjectId,
      tokenVersion,
      tokenHash: this.hasher.hmac(token),
      issuedAt: now,
      expiresAt: new Date(now.getTime() + this.policy.ttlDays * 86_400_000),
    });
    return token;
  }

  /**
   * Retires the presented token and returns its subject and token version. The caller issues the
   * successor for that version, not for whatever the subject holds by then: when a concurrent
   * request presented the same token and voided everything (the version went up), the successor
   * is born void too, on whichever instance it was issued.
   */
  async rotate(token: string, now: Date, subject: TokenSubject): Promise<RotatedToken> {
    const stored = await this.store.findByHash(this.hasher.hmac(token));
    if (!stored) throw new InvalidRefreshTokenError();
    const currentVersion = await subject.currentTokenVersion(stored.subjectId);
    if (currentVersion === null) throw new InvalidRefreshTokenError();
    // A dead token (revoked, expired, from an earlier version) is refused and nothing more: a
    // replay of an old stolen token must not be a way to log the owner out again and again.
    if (stored.revokedAt || stored.tokenVersion !== currentVersion || stored.expiresAt <= now) throw new InvalidRefreshTokenError();
    if (stored.rotatedAt) {
      await this.voidAll(stored.subjectId, subject, now);
      throw new InvalidRefreshTokenError();
    }
    if (!(await this.store.markRotated(stored.id, now))) {
      // A concurrent request rotated it first: the same token was presented twice.
      await this.voidAll(stored.subjectId, subject, now);
      throw new InvalidRefreshTokenError();
    }
    return { subjectId: stored.subjectId, tokenVersion: stored.tokenVersion };
  }

  /** Logout: the token stops working; unknown tokens are ignored so logout is safe to retry. */
  revoke(token: string, now: Date): Promise<void> {
    return this.store.revokeByHash(this.hasher.hmac(token), now);
  }

  revokeAllOf(subjectId: string, now: Date): Promise<void> {
    return this.store.revokeAllOf(subjectId, now);
  }

  private async voidAll(subjectId: string, subject: TokenSubject, now: Date): Promise<void> {
    await subject.revokeAllTokens(subjectId);
    await this.store.revokeAllOf(subjectId, now);
  }
}
