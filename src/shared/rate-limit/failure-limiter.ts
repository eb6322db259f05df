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

  /** Throws RATE_LIMITED (with Retry-After) while any of the buckets is full. */
  async refuseWhileLimited(buckets: FailureBucket[]): Promise<void> {
    const wait = await this.retryAfterSec(buckets);
    if (wait > 0) throw new RateLimitedError(wait);
  }

  /** Runs a credential check; a domain error from it (a failed check) counts against the buckets. */
  async countingFailures<T>(buckets: FailureBucket[], check: () => Promise<T>): Promise<T> {
    try {
      return await check();
    } catch (error) {
      if (error instanceof DomainError) await this.recordFailure(buckets);
      throw error;
    }
  }
}

interface Window {
  count: number;
  resetsAt: number;
}

const MAX_KEYS = 100_000;

export class InMemoryFailureLimiter extends FailureLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly now: () => number = Date.now) {
    super();
  }

  async retryAfterSec(buckets: FailureBucket[]): Promise<number> {
    const now = this.now();
    let wait = 0;
    for (const bucket of buckets) {
      const window = this.windows.get(bucket.key);
      if (window && window.resetsAt > now && window.count >= bucket.limit) {
        wait = Math.max(wait, Math.ceil((window.resetsAt - now) / 1000));
      }
    }
    return wait;
  }

  async recordFailure(buckets: FailureBucket[]): Promise<void> {
    const now = this.now();
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
    }
  }
}
