import { AddressGroupingLimiter, limitedAddress } from './address-grouping.js';
import { InMemoryFailureLimiter } from './failure-limiter.js';

describe('limitedAddress', () => {
  it.each([
    ['198.51.100.7', 64, '198.51.100.7'],
    ['2001:db8:1:2:3:4:5:6', 64, '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:ffff:ffff:ffff:ffff', 64, '2001:db8:1:2::/64'],
    ['2001:db8:1:2::1', 64, '2001:db8:1:2::/64'],
    ['2001:db8::1', 64, '2001:db8::/64'],
    ['2001:db8:1:2:3:4:5:6', 48, '2001:db8:1::/48'],
    ['2001:db8:1:2:3:4:5:6', 56, '2001:db8:1::/56'],
    ['2001:db8:1:2ab:3:4:5:6', 56, '2001:db8:1:200::/56'],
    ['2001:db8:1:2:3:4:5:6', 128, '2001:db8:1:2:3:4:5:6/128'],
    ['::1', 64, '::/64'],
    ['::ffff:192.0.2.1', 64, '192.0.2.1'],
    ['fe80::1%eth0', 64, 'fe80::/64'],
    ['unknown', 64, 'unknown'],
  ])('%s with a /%d prefix counts as %s', (address, prefix, expected) => {
    expect(limitedAddress(address, prefix)).toBe(expected);
  });
});

describe('AddressGroupingLimiter', () => {
  const bucket = (address: string) => [{ key: `login:address:${address}`, limit: 2, windowSec: 60 }];

  it('makes two addresses of one /64 share their address buckets; another /64 and other keys are apart', async () => {
    const limiter = new AddressGroupingLimiter(new InMemoryFailureLimiter(() => 0), 64);
    await limiter.recordFailure(bucket('2001:db8:1:2::a'));
    await limiter.recordFailure(bucket('2001:db8:1:2::b'));

    expect(await limiter.retryAfterSec(bucket('2001:db8:1:2::c'))).toBe(60);
    expect(await limiter.retryAfterSec(bucket('2001:db8:1:3::a'))).toBe(0);
    expect(await limiter.acquire([{ key: 'login:device:2001:db8:1:2::a', limit: 2, windowSec: 60 }])).toBe(0);
  });

  it('counts single addresses with a /128 prefix', async () => {
    const limiter = new AddressGroupingLimiter(new InMemoryFailureLimiter(() => 0), 128);
    await limiter.recordFailure(bucket('2001:db8:1:2::a'));
    await limiter.recordFailure(bucket('2001:db8:1:2::b'));

    expect(await limiter.retryAfterSec(bucket('2001:db8:1:2::c'))).toBe(0);
  });
});
