import { DomainError, RateLimitedError } from '../domain-error.js';

/** One counter of failed credential checks: a key, how many failures it tolerates, and for how long. */
export interface FailureBucket {
  key: string;
  limit: number;
  windowSec: number;
}

/**
 * Counts failed credential checks (logins, claim codes, refresh tokens) per device, account and
 * client address. A bucket that reached its limit blocks further attempts until its window ends.
 * The abstract class is the injection token; an in-memory store serves one instance, a shared
 * store serves many.
 */
export abstract class FailureLimiter {
  /** Seconds until every given bucket admits attempts again; 0 when none is blocked. */
  abstract retryAfterSec(buckets: FailureBucket[]): Promise<number>;
  abstract recordFailure(buckets: FailureBucket[]): Promise<void>;
  /**
   * In one step: 0 and every bucket counts one more attempt, or the seconds to wait when a
   * bucket is full (then nothing is counted).
   */
  abstract acquire(buckets: FailureBucket[]): Promise<number>;
  /** Takes back an attempt counted by acquire (it did not fail). */
  abstract refund(buckets: FailureBucket[]): Promise<void>;

  /**
   * For request budgets (registrations, uploads), not credential checks: like acquire, but null
   * (nothing counted) while the store cannot answer, so the route can go on unlimited through an
   * outage instead of failing.
   */
  async tryAcquire(buckets: FailureBucket[]): Promise<number | null> {
    try {
      return await this.acquire(buckets);
    } catch (error) {
      if (error instanceof DomainError && error.kind === 'unavailable') return null;
      throw error;
    }
  }

  /** Throws RATE_LIMITED (with Retry-After) while any of the buckets is full. */
  async refuseWhileLimited(buckets: FailureBucket[]): Promise<void> {
    const wait = await this.retryAfterSec(buckets);
    if (wait > 0) throw new RateLimitedError(limiterOf(buckets), wait);
  }

  /**
   * Runs a credential check as a counted attempt: it is counted before the check starts, so a
   * burst of parallel guesses cannot all slip under the limit, and refunded unless the check fails
   * with an error that `isFailure` accepts (by default any domain error but unavailability: a check
   * the database could not make is not a failed one, and must not lock the caller out).
   */
  async guard<T>(
    buckets: FailureBucket[],
    check: () => Promise<T>,
    isFailure: (error: unknown) => boolean = (error) => error instanceof DomainError && error.kind !== 'unavailable',
  ): Promise<T> {
    const wait = await this.acquire(buckets);
    if (wait > 0) throw new RateLimitedError(limiterOf(buckets), wait);
    try {
      const result = await check();
      await this.refund(buckets);
      return result;
    } catch (error) {
      if (!isFailure(error)) await this.refund(buckets);
      throw error;
    }
  }
}

/** The limit's name: what its bucket keys start with (`user-login:email:…` → `user-login`). */
export function limiterOf(buckets: FailureBucket[]): string {
  return buckets[0]?.key.split(':', 1)[0] ?? 'unknown';
}

interface Window {
  count: number;
  resetsAt: number;
}

const MAX_KEYS = 100_000;

export class InMemoryFailureLimiter extends FailureLimiter {
  private readonly windows = new Map<string, Window>();
  private evicted = 0;

  constructor(private readonly now: () => number = Date.now) {
    super();
  }

  async retryAfterSec(buckets: FailureBucket[]): Promise<number> {
    return this.waitSec(buckets, this.now());
  }

  async recordFailure(buckets: FailureBucket[]): Promise<void> {
    this.count(buckets, this.now());
  }

  /** Check and count without yielding in between, so concurrent attempts cannot interleave. */
  async acquire(buckets: FailureBucket[]): Promise<number> {
    const now = this.now();
    const wait = this.waitSec(buckets, now);
    if (wait === 0) this.count(buckets, now);
    return wait;
  }

  async refund(buckets: FailureBucket[]): Promise<void> {
    const now = this.now();
    for (const bucket of buckets) {
      const window = this.windows.get(bucket.key);
      if (window && window.resetsAt > now && window.count > 0) window.count -= 1;
    }
  }

  private waitSec(buckets: FailureBucket[], now: number): number {
    let wait = 0;
    for (const bucket of buckets) {
      const window = this.windows.get(bucket.key);
      if (window && window.resetsAt > now && window.count >= bucket.limit) {
        wait = Math.max(wait, Math.ceil((window.resetsAt - now) / 1000));
      }
    }
    return wait;
  }

  private count(buckets: FailureBucket[], now: number): void {
    for (const bucket of buckets) {
      const window = this.windows.get(bucket.key);
      if (window && window.resetsAt > now) {
        window.count += 1;
      } else {
        this.makeRoom(now);
        this.windows.set(bucket.key, { count: 1, resetsAt: now + bucket.windowSec * 1000 });
      }
    }
  }

  /** Bounds memory under a flood of distinct keys: expired windows go first, then the oldest. */
  private makeRoom(now: number): void {
    if (this.windows.size < MAX_KEYS) return;
    for (const [key, window] of this.windows) {
      if (window.resetsAt <= now) this.windows.delete(key);
    }
    while (this.windows.size >= MAX_KEYS) {
      const oldest = this.windows.keys().next().value as string;
      this.windows.delete(oldest);
      this.evicted += 1;
    }
  }

  /** Windows held (one per limited subject: device, address, account), for /metrics. */
  census(): { size: number; capacity: number; evictions: number } {
    return { size: this.windows.size, capacity: MAX_KEYS, evictions: this.evicted };
  }
}
