import { createHmac } from 'node:crypto';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Redis, ReplyError } from 'ioredis';
import { DomainError } from '../domain-error.js';
import { FailureLimiter, type FailureBucket } from './failure-limiter.js';

/** While the shared counters cannot be read, credential checks are refused, never waved through. */
export class RateLimitStoreUnavailableError extends DomainError {
  constructor() {
    super('SERVICE_UNAVAILABLE', 'unavailable', 'Credential checks are paused: the rate-limit store is not reachable. Retry later.', { retryAfterSec: 5 });
  }
}

/*
 * Each script runs atomically in Redis, so attempts arriving at several instances at once are
 * checked and counted one after another. KEYS are the buckets; ARGV holds each bucket's limit and
 * window in milliseconds, in the same order. A window starts with its first count and ends when
 * the key expires, on Redis's clock, so the instances' clocks do not matter.
 */

/** The longest wait (ms) of the full buckets; when none is full and the last ARGV is 1, counts one in each. */
const WAIT_OR_COUNT = `
local wait = 0
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') >= tonumber(ARGV[2 * i - 1]) then
    local ttl = redis.call('PTTL', key)
    if ttl < 0 then
      ttl = tonumber(ARGV[2 * i])
      redis.call('PEXPIRE', key, ttl)
    end
    if ttl > wait then wait = ttl end
  end
end
if wait > 0 or ARGV[#ARGV] ~= '1' then return wait end
for i, key in ipairs(KEYS) do
  redis.call('INCR', key)
  if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, ARGV[2 * i]) end
end
return 0
`;

const COUNT = `
for i, key in ipairs(KEYS) do
  redis.call('INCR', key)
  if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, ARGV[2 * i]) end
end
return 0
`;

/** Takes one back from each bucket still counting; an expired window stays gone. */
const REFUND = `
for _, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') > 0 then redis.call('DECR', key) end
end
return 0
`;

export interface RedisFailureLimiterOptions {
  /** Start of every key, e.g. `dcs:`; the limiter adds `rl:`. */
  keyPrefix: string;
  /** HMAC key for the identifying part of bucket keys (e-mails, addresses, ids), so Redis holds none in clear. */
  keySecret: string;
}

/**
 * The failure limits of every instance in one Redis. A Redis that does not answer within a second
 * fails the credential check with 503 SERVICE_UNAVAILABLE (fail closed): an outage must not turn
 * into unlimited guessing.
 */
export class RedisFailureLimiter extends FailureLimiter implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisFailureLimiter.name);
  private reachable = true;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisFailureLimiterOptions,
  ) {
    super();
    redis.on('error', (error: Error) => this.markUnreachable(error));
    redis.on('ready', () => this.markReachable());
  }

  /**
   * A client that gives up quickly: a command waits at most a second (also while reconnecting),
   * and reconnection goes on in the background. A short disconnect timeout, so closing while
   * Redis is away leaves no timer holding the process.
   */
  static connect(url: string, options: RedisFailureLimiterOptions): RedisFailureLimiter {
    const redis = new Redis(url, { connectionName: 'dcs-rate-limit', connectTimeout: 2000, commandTimeout: 1000, maxRetriesPerRequest: 1, disconnectTimeout: 100 });
    return new RedisFailureLimiter(redis, options);
  }

  async retryAfterSec(buckets: FailureBucket[]): Promise<number> {
    return toSeconds(await this.run(WAIT_OR_COUNT, buckets, '0'));
  }

  async recordFailure(buckets: FailureBucket[]): Promise<void> {
    await this.run(COUNT, buckets);
  }

  async acquire(buckets: FailureBucket[]): Promise<number> {
    return toSeconds(await this.run(WAIT_OR_COUNT, buckets, '1'));
  }

  /**
   * Never throws: the check it follows already ran, and its answer (a rotated token, say) must
   * reach the caller. A refund that does not arrive leaves the attempt counted.
   */
  async refund(buckets: FailureBucket[]): Promise<void> {
    await this.run(REFUND, buckets).catch((error: unknown) => {
      this.logger.warn({ err: (error as Error).message }, 'Rate-limit refund lost; the attempt stays counted');
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  async close(): Promise<void> {
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => undefined);
    this.redis.disconnect();
  }

  /**
   * `user-login:email:ada@example.com` → `dcs:rl:user-login:email:<HMAC>`: which limit a key
   * belongs to stays readable, whom it counts does not.
   */
  keyOf(bucketKey: string): string {
    const parts = bucketKey.split(':');
    const [label, subject] = parts.length > 2 ? [`${parts[0]}:${parts[1]}:`, parts.slice(2).join(':')] : ['', bucketKey];
    return `${this.options.keyPrefix}rl:${label}${createHmac('sha256', this.options.keySecret).update(subject).digest('base64url')}`;
  }

  private async run(script: string, buckets: FailureBucket[], ...extra: string[]): Promise<number> {
    if (buckets.length === 0) return 0;
    const keys = buckets.map((bucket) => this.keyOf(bucket.key));
    const args = buckets.flatMap((bucket) => [String(bucket.limit), String(Math.round(bucket.windowSec * 1000))]);
    try {
      const result = Number(await this.redis.eval(script, keys.length, ...keys, ...args, ...extra));
      this.markReachable();
      return result;
    } catch (error) {
      // Redis answered with an error: a bug here, not an outage.
      if (error instanceof ReplyError) throw error;
      this.markUnreachable(error as Error);
      throw new RateLimitStoreUnavailableError();
    }
  }

  private markUnreachable(error: Error): void {
    if (!this.reachable) return;
    this.reachable = false;
    this.logger.error({ err: error.message }, 'Rate-limit store (Redis) not reachable: credential checks answer 503 until it is back');
  }

  private markReachable(): void {
    if (this.reachable) return;
    this.reachable = true;
    this.logger.log('Rate-limit store (Redis) reachable again');
  }
}

function toSeconds(ms: number): number {
  return ms > 0 ? Math.ceil(ms / 1000) : 0;
}
