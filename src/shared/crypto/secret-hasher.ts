import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as argon2 from 'argon2';
import { Semaphore } from '../semaphore.js';

/**
 * Hashing for the two kinds of secret the service holds.
 * High-entropy random values (device secrets, refresh tokens) get a keyed HMAC-SHA-256 under a
 * pepper kept outside the database: cheap enough for fleet-wide logins, useless to a thief of the
 * database alone. Low-entropy human values (claim codes, passwords) get argon2id.
 */
/**
 * argon2id with the last of OWASP's equivalent settings (Password Storage Cheat Sheet: "an equal
 * level of defense, the only difference is a trade off between CPU and RAM usage"): 7 MiB, five
 * passes, one lane. The service's budget is memory (200 MB), and this one costs the least of it at
 * the same CPU (27 ms per hash against 35 ms for 19 MiB and two passes, on a 2-vCPU Xeon). The
 * library's default (64 MiB, three passes, four lanes) took 128 MiB for two logins at once.
 * Stored hashes carry their parameters; an older one still verifies and is replaced at the next
 * successful login (needsRehash).
 */
export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 7_168, timeCost: 5, parallelism: 1 } as const;

/** What an argon2id hash costs: memory (KiB), passes and lanes. */
export interface Argon2Cost {
  memoryCost: number;
  timeCost: number;
  parallelism: number;
}

/**
 * argon2 runs on libuv's thread pool (4 threads), which the pg driver also needs for SCRAM logins
 * and TLS. Unbounded, a burst of registrations fills the pool and new database connections time
 * out; bounded, argon2 waits its turn and also caps its memory (7 MiB each).
 */
const MAX_CONCURRENT_ARGON2 = 2;

export class SecretHasher {
  private readonly dummyArgonHash: Promise<string>;
  private readonly argon2Slots = new Semaphore(MAX_CONCURRENT_ARGON2);

  private readonly argon2Options: Argon2Cost & { type: typeof argon2.argon2id };

  /**
   * `cost` is ARGON2_OPTIONS's in the service; only tests pass a cheaper one (the suite would
   * otherwise spend a third of its CPU on hashing), and the tests of the production cost do not.
   */
  constructor(
    private readonly pepper: string,
    cost: Argon2Cost = ARGON2_OPTIONS,
  ) {
    this.argon2Options = { ...cost, type: argon2.argon2id };
    this.dummyArgonHash = argon2.hash(randomBytes(16).toString('hex'), this.argon2Options);
  }

  static randomToken(bytes = 32): string {
    return randomBytes(bytes).toString('base64url');
  }

  hmac(value: string): string {
    return createHmac('sha256', this.pepper).update(value, 'utf8').digest('hex');
  }

  /**
   * A token derived from `value` under the pepper (base64url, 43 characters, like randomToken()):
   * the same value always gives the same token, which no one without the pepper can compute.
   */
  derive(value: string): string {
    return createHmac('sha256', this.pepper).update(value, 'utf8').digest('base64url');
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
    return this.argon2Slots.run(() => argon2.hash(value, this.argon2Options));
  }

  /** Verifies against the stored argon2id hash; with none, burns the same time on a dummy hash. */
  async verifyLowEntropy(value: string, storedHash: string | null | undefined): Promise<boolean> {
    const dummy = await this.dummyArgonHash;
    return this.argon2Slots.run(async () => {
      const matches = await argon2.verify(storedHash ?? dummy, value).catch(() => false);
      return Boolean(storedHash) && matches;
    });
  }

  /** Whether an argon2id hash was made with other parameters than the current ones (an older default). */
  needsRehash(storedHash: string): boolean {
    try {
      return argon2.needsRehash(storedHash, this.argon2Options);
    } catch {
      return false;
    }
  }
}
