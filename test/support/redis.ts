import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** The Redis the tests use: TEST_REDIS_URL, or the one a developer machine or CI runs on the default port. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function answers(url: string): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: 1000, commandTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/**
 * Whether the tests that need a real Redis can run. Without one they are skipped, and say so on
 * stderr: the only skip the suite allows, so `npm test` passes on a machine without Redis.
 * `.ci/run` sets REQUIRE_REDIS=1, and there a missing Redis fails the file instead.
 */
export async function redisForTests(what: string): Promise<boolean> {
  if (await answers(TEST_REDIS_URL)) return true;
  if (process.env.REQUIRE_REDIS) throw new Error(`REQUIRE_REDIS is set but no Redis answers at ${TEST_REDIS_URL}`);
  process.stderr.write(`\nSKIPPING ${what}: no Redis answers at ${TEST_REDIS_URL} (start redis-server, or set TEST_REDIS_URL).\n`);
  return false;
}

/** A key prefix no other test run uses, so runs sharing one Redis never see each other's counters. */
export function aRedisKeyPrefix(): string {
  return `dcs-test-${randomBytes(6).toString('hex')}:`;
}

/** Deletes every key under the prefix (tests clean up after themselves on a shared Redis). */
export async function deleteRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
