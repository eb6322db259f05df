import { DatabaseUnavailableError } from '../database/database-errors.js';
import { DomainError } from '../domain-error.js';
import { InMemoryFailureLimiter, type FailureBucket } from './failure-limiter.js';

/** A limiter on a clock the test moves by hand. */
function aLimiter() {
  const clock = { nowMs: 1_000_000 };
  const limiter = new InMemoryFailureLimiter(() => clock.nowMs);
  const advanceSec = (seconds: number) => {
    clock.nowMs += seconds * 1000;
  };
  return { limiter, advanceSec };
}

const device: FailureBucket = { key: 'login:device:gw-1', limit: 3, windowSec: 60 };
const address: FailureBucket = { key: 'login:address:203.0.113.7', limit: 5, windowSec: 300 };

async function failTimes(limiter: InMemoryFailureLimiter, buckets: FailureBucket[], times: number): Promise<void> {
  for (let i = 0; i < times; i++) await limiter.recordFailure(buckets);
}

describe('InMemoryFailureLimiter', () => {
  it('admits attempts while no failure was recorded', async () => {
    const { limiter } = aLimiter();

    expect(await limiter.retryAfterSec([device, address])).toBe(0);
  });

  it('admits attempts below the limit', async () => {
    const { limiter } = aLimiter();
    await failTimes(limiter, [device], device.limit - 1);

    expect(await limiter.retryAfterSec([device])).toBe(0);
  });

  it('blocks at the limit until the window that began with the first failure ends', async () => {
    const { limiter, advanceSec } = aLimiter();
    await limiter.recordFailure([device]);
    advanceSec(20);
    await failTimes(limiter, [device], device.limit - 1);

    expect(await limiter.retryAfterSec([device])).toBe(40);
    advanceSec(39.5);
    expect(await limiter.retryAfterSec([device])).toBe(1);
    advanceSec(0.5);
    expect(await limiter.retryAfterSec([device])).toBe(0);
  });

  it('rounds a partial second of waiting up', async () => {
    const { limiter, advanceSec } = aLimiter();
    await failTimes(limiter, [device], device.limit);
    advanceSec(0.001);

    expect(await limiter.retryAfterSec([device])).toBe(60);
  });

  it('starts counting afresh after the window ended', async () => {
    const { limiter, advanceSec } = aLimiter();
    await failTimes(limiter, [device], device.limit);
    advanceSec(device.windowSec);

    await failTimes(limiter, [device], device.limit - 1);
    expect(await limiter.retryAfterSec([device])).toBe(0);

    await limiter.recordFailure([device]);
    expect(await limiter.retryAfterSec([device])).toBe(device.windowSec);
  });

  it('answers the longest wait of the blocked buckets', async () => {
    const { limiter, advanceSec } = aLimiter();
    await failTimes(limiter, [device, address], address.limit);

    expect(await limiter.retryAfterSec([device, address])).toBe(300);
    expect(await limiter.retryAfterSec([device])).toBe(60);
    advanceSec(60);
    expect(await limiter.retryAfterSec([device, address])).toBe(240);
  });

  it('ignores a bucket that is counting but below its limit', async () => {
    const { limiter } = aLimiter();
    await failTimes(limiter, [device, address], device.limit);

    expect(await limiter.retryAfterSec([address])).toBe(0);
    expect(await limiter.retryAfterSec([device, address])).toBe(60);
  });

  it('keeps keys apart', async () => {
    const { limiter } = aLimiter();
    const otherDevice: FailureBucket = { ...device, key: 'login:device:gw-2' };
    await failTimes(limiter, [device], device.limit);

    expect(await limiter.retryAfterSec([device])).toBe(60);
    expect(await limiter.retryAfterSec([otherDevice])).toBe(0);
  });

  it('keeps separate limiters apart', async () => {
    const first = aLimiter().limiter;
    const second = aLimiter().limiter;
    await failTimes(first, [device], device.limit);

    expect(await second.retryAfterSec([device])).toBe(0);
  });

  it('tryAcquire: like acquire while the store answers (0 and counted, then the wait)', async () => {
    const { limiter } = aLimiter();
    for (let i = 0; i < device.limit; i++) expect(await limiter.tryAcquire([device])).toBe(0);

    expect(await limiter.tryAcquire([device])).toBe(60);
  });

  it('guard: counts a check that failed, not one the database could not make', async () => {
    const { limiter } = aLimiter();
    const wrongSecret = () => Promise.reject(new DomainError('INVALID_CREDENTIALS', 'unauthorized', 'wrong'));
    const databaseDown = () => Promise.reject(new DatabaseUnavailableError('ECONNREFUSED'));

    for (let i = 0; i < device.limit; i++) await expect(limiter.guard([device], databaseDown)).rejects.toBeInstanceOf(DatabaseUnavailableError);
    expect(await limiter.retryAfterSec([device])).toBe(0);
    for (let i = 0; i < device.limit; i++) await expect(limiter.guard([device], wrongSecret)).rejects.toBeInstanceOf(DomainError);
    expect(await limiter.retryAfterSec([device])).toBe(60);
  });
});
