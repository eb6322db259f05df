import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as argon2 from 'argon2';

/**
 * Hashing for the two kinds of secret the service holds.
 * High-entropy random values (device secrets, refresh tokens) get a keyed HMAC-SHA-256 under a
 * pepper kept outside the database: cheap enough for fleet-wide logins, useless to a thief of the
 * database alone. Low-entropy human values (claim codes, passwords) get argon2id.
 */
export class SecretHasher {
  private readonly dummyArgonHash: Promise<string>;

  constructor(private readonly pepper: string) {
    this.dummyArgonHash = argon2.hash(randomBytes(16).toString('hex'), { type: argon2.argon2id });
  }

  static randomToken(bytes = 32): string {
    return randomBytes(bytes).toString('base64url');
  }

  hmac(value: string): string {
    return createHmac('sha256', this.pepper).update(value, 'utf8').digest('hex');
  }

  /** Constant-time comparison of a presented value with a stored HMAC (hex). */
  hmacMatches(value: string, storedHash: string | undefined): boolean {
    const presented = Buffer.from(this.hmac(value), 'hex');
    const stored = Buffer.from(storedHash ?? '', 'hex');
    if (stored.length !== presented.length) {
      timingSafeEqual(presented, presented);
      return false;
    }
    return timingSafeEqual(presented, stored);
  }

  hashLowEntropy(value: string): Promise<string> {
    return argon2.hash(value, { type: argon2.argon2id });
  }

  /** Verifies against the stored argon2id hash; with none, burns the same time on a dummy hash. */
  async verifyLowEntropy(value: string, storedHash: string | null | undefined): Promise<boolean> {
    if (!storedHash) {
      await argon2.verify(await this.dummyArgonHash, value).catch(() => false);
      return false;
    }
    return argon2.verify(storedHash, value).catch(() => false);
  }
}
