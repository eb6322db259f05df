import { createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { eventually } from '../../../test/support/eventually.js';
import { aRedisKeyPrefix, deleteRedisKeys, redisForTests, TEST_REDIS_URL } from '../../../test/support/redis.js';
import { RateLimitedError } from '../domain-error.js';
import type { FailureBucket } from './failure-limiter.js';
import { RateLimitStoreUnavailableError, RedisFailureLimiter } from './redis-failure-limiter.js';

/*
 * Against the real Redis at TEST_REDIS_URL (127.0.0.1:6379 by default). Without one these tests
 * are skipped with a message on stderr (the suite's one allowed skip); .ci/run sets REQUIRE_REDIS=1
 * so there they run or fail. The tests of an unreachable Redis need none and always run.
 */
const redisAnswers = await redisForTests('the RedisFailureLimiter tests against a real Redis');
const describeWithRedis = redisAnswers ? describe : describe.skip;

const SECRET = 'k'.repeat(32);
const device: FailureBucket = { key: 'login:device:gw-1', limit: 3, windowSec: 60 };
const address: FailureBucket = { key: 'login:address:203.0.113.7', limit: 5, windowSec: 300 };

async function failTimes(limiter: RedisFailureLimiter, buckets: FailureBucket[], times: number): Promise<void> {
  for (let i = 0; i < times; i++) await limiter.recordFailure(buckets);
}

describeWithRedis('RedisFailureLimiter on a real Redis', () => {
  const prefix = aRedisKeyPrefix();
  const limiters: RedisFailureLimiter[] = [];
  let raw: Redis;

  /** Another instance of the service: its own connection, the same Redis, prefix and key. */
  const anInstance = (options: { keyPrefix?: string; keySecret?: string } = {}) => {
    const limiter = RedisFailureLimiter.connect(TEST_REDIS_URL, { keyPrefix: prefix, keySecret: SECRET, ...options });
    limiters.push(limiter);
    return limiter;
  };
  /** A bucket no other test touches. */
  let serial = 0;
  const aBucket = (overrides: Partial<FailureBucket> = {}): FailureBucket => ({ ...device, key: `login:device:gw-${++serial}`, ...overrides });
  const counted = async (limiter: RedisFailureLimiter, bucket: FailureBucket) => Number((await raw.get(limiter.keyOf(bucket.key))) ?? 0);

  beforeAll(() => {
    raw = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    await Promise.all(limiters.map((limiter) => limiter.close()));
    await deleteRedisKeys(prefix);
    raw.disconnect();
  });

  it('admits attempts while no failure was recorded', async () => {
    expect(await anInstance().retryAfterSec([aBucket(), { ...address, key: `login:address:${++serial}` }])).toBe(0);
  });

  it('admits attempts below the limit and blocks at it for the rest of the window that began with the first failure', async () => {
    const limiter = anInstance();
    const bucket = aBucket();
    await failTimes(limiter, [bucket], bucket.limit - 1);
    expect(await limiter.retryAfterSec([bucket])).toBe(0);

    await limiter.recordFailure([bucket]);

    expect(await limiter.retryAfterSec([bucket])).toBe(60);
    const ttl = await raw.pttl(limiter.keyOf(bucket.key));
    expect(ttl).toBeGreaterThan(58_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('acquire counts an attempt in every bucket; at the limit it answers the wait and counts nothing', async () => {
    const limiter = anInstance();
    const [first, second] = [aBucket({ limit: 2 }), aBucket({ limit: 5, windowSec: 300 })];

    expect(await limiter.acquire([first, second])).toBe(0);
    expect(await limiter.acquire([first, second])).toBe(0);
    expect([await counted(limiter, first), await counted(limiter, second)]).toEqual([2, 2]);

    expect(await limiter.acquire([first, second])).toBe(60);
    expect([await counted(limiter, first), await counted(limiter, second)]).toEqual([2, 2]);
  });

  it('refund takes an acquired attempt back, keeping the window', async () => {
    const limiter = anInstance();
    const bucket = aBucket({ limit: 1 });
    await limiter.acquire([bucket]);
    expect(await limiter.acquire([bucket])).toBe(60);

    await limiter.refund([bucket]);

    expect(await counted(limiter, bucket)).toBe(0);
    expect(await raw.pttl(limiter.keyOf(bucket.key))).toBeGreaterThan(58_000);
    expect(await limiter.acquire([bucket])).toBe(0);
  });

  it('a refund after the window ended leaves no key behind', async () => {
    const limiter = anInstance();
    const bucket = aBucket({ limit: 1, windowSec: 0.2 });
    await limiter.acquire([bucket]);
    // The window ends when Redis expires its key: Redis's own clock, which no test moves.
    await eventually(async () => expect(await raw.exists(limiter.keyOf(bucket.key))).toBe(0), 2000);

    await limiter.refund([bucket]);

    expect(await raw.exists(limiter.keyOf(bucket.key))).toBe(0);
  });

  it('starts counting afresh after the window ended', async () => {
    const limiter = anInstance();
    const bucket = aBucket({ limit: 2, windowSec: 0.3 });
    await failTimes(limiter, [bucket], 2);
    expect(await limiter.retryAfterSec([bucket])).toBe(1);

    await eventually(async () => expect(await limiter.retryAfterSec([bucket])).toBe(0), 2000);
    await limiter.recordFailure([bucket]);
    expect(await limiter.retryAfterSec([bucket])).toBe(0);
  });

  it('answers the longest wait of the blocked buckets and ignores one below its limit', async () => {
    const limiter = anInstance();
    const short = aBucket({ limit: 2, windowSec: 60 });
    const long = aBucket({ limit: 2, windowSec: 300 });
    const roomy = aBucket({ limit: 10, windowSec: 900 });
    await failTimes(limiter, [short, long, roomy], 2);

    expect(await limiter.retryAfterSec([short, long, roomy])).toBe(300);
    expect(await limiter.retryAfterSec([short, roomy])).toBe(60);
    expect(await limiter.retryAfterSec([roomy])).toBe(0);
  });

  it('counts failures made through two instances together: the second is blocked by what the first recorded', async () => {
    const [a, b] = [anInstance(), anInstance()];
    const bucket = aBucket({ limit: 4 });
    await failTimes(a, [bucket], 2);
    await failTimes(b, [bucket], 2);

    expect(await a.retryAfterSec([bucket])).toBe(60);
    expect(await b.acquire([bucket])).toBe(60);
    await expect(b.guard([bucket], async () => 'checked')).rejects.toBeInstanceOf(RateLimitedError);
  });

  it('lets no more than the limit through when two instances acquire at the same moment', async () => {
    const [a, b] = [anInstance(), anInstance()];
    const bucket = aBucket({ limit: 5 });

    const waits = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).acquire([bucket])));

    expect(waits.filter((wait) => wait === 0)).toHaveLength(5);
    expect(waits.filter((wait) => wait === 60)).toHaveLength(35);
    expect(await counted(a, bucket)).toBe(5);
  });

  it('keeps keys, prefixes and HMAC keys apart', async () => {
    const limiter = anInstance();
    const bucket = aBucket({ limit: 1 });
    await limiter.recordFailure([bucket]);

    expect(await limiter.retryAfterSec([{ ...bucket, key: `${bucket.key}x` }])).toBe(0);
    expect(await anInstance({ keyPrefix: aRedisKeyPrefix() }).retryAfterSec([bucket])).toBe(0);
    expect(await anInstance({ keySecret: 'o'.repeat(32) }).retryAfterSec([bucket])).toBe(0);
    expect(await anInstance().retryAfterSec([bucket])).toBe(60);
  });

  it('names keys by prefix and limit, with the e-mail or address as an HMAC only', async () => {
    const limiter = anInstance();
    const email = `ada-${serial}@example.com`;
    await limiter.recordFailure([{ key: `user-login:email:${email}`, limit: 3, windowSec: 60 }, { key: 'user-login:address:2001:db8::7', limit: 3, windowSec: 60 }]);

    const keys = await raw.keys(`${prefix}*`);
    const written = keys.filter((key) => key === limiter.keyOf(`user-login:email:${email}`) || key === limiter.keyOf('user-login:address:2001:db8::7'));
    expect(written).toHaveLength(2);
    for (const key of written) expect(key).toMatch(new RegExp(`^${prefix}rl:user-login:(email|address):[A-Za-z0-9_-]{43}$`));
    expect(keys.join(' ')).not.toContain('ada-');
    expect(keys.join(' ')).not.toContain('2001:db8');
  });
});

describe('RedisFailureLimiter when Redis does not answer (fails closed)', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  let silentPort: number;
  let closedPort: number;

  beforeAll(async () => {
    // Accepts connections and never answers: a hung Redis.
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as { port: number }).port;
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    closedPort = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it.each([
    ['nothing listens on the port', () => `redis://127.0.0.1:${closedPort}`],
    ['the server accepts but never answers', () => `redis://127.0.0.1:${silentPort}`],
  ])('%s: acquire and retryAfterSec throw 503 SERVICE_UNAVAILABLE within seconds, guard never runs the check, refund stays quiet', async (_case, url) => {
    const limiter = RedisFailureLimiter.connect(url(), { keyPrefix: aRedisKeyPrefix(), keySecret: SECRET });
    try {
      const started = Date.now();
      const error = await limiter.acquire([device]).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(RateLimitStoreUnavailableError);
      expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', kind: 'unavailable', details: { retryAfterSec: 5 } });
      expect(Date.now() - started).toBeLessThan(5000);

      await expect(limiter.retryAfterSec([device])).rejects.toBeInstanceOf(RateLimitStoreUnavailableError);
      await expect(limiter.recordFailure([device])).rejects.toBeInstanceOf(RateLimitStoreUnavailableError);
      let checked = false;
      await expect(
        limiter.guard([device], async () => {
          checked = true;
        }),
      ).rejects.toBeInstanceOf(RateLimitStoreUnavailableError);
      expect(checked).toBe(false);
      await expect(limiter.refund([device])).resolves.toBeUndefined();
      // Request budgets (uploads, new registrations) go on unlimited instead: null, nothing counted.
      await expect(limiter.tryAcquire([device])).resolves.toBeNull();
    } finally {
      await limiter.close();
    }
  });
});
