import type { OnApplicationShutdown } from '@nestjs/common';
import ipaddr from 'ipaddr.js';
import { FailureLimiter, type FailureBucket } from './failure-limiter.js';

/**
 * What a rate limit counts for a client address: an IPv4 address as it is; an IPv6 address by its
 * network of `ipv6PrefixLength` bits (a subscriber gets a whole /64 and picks addresses in it at
 * will, so counting single addresses would be no limit there), written `2001:db8:1:2::/64`; an
 * IPv4 address mapped into IPv6 (`::ffff:192.0.2.1`) as the IPv4 address. Anything else unchanged.
 */
export function limitedAddress(address: string, ipv6PrefixLength: number): string {
  if (!ipaddr.IPv6.isValid(address)) return address;
  const parsed = ipaddr.IPv6.parse(address);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  const network = parsed.parts.map((group, index) => {
    const bits = Math.max(0, Math.min(16, ipv6PrefixLength - index * 16));
    return group & (0xffff << (16 - bits)) & 0xffff;
  });
  return `${new ipaddr.IPv6(network).toRFC5952String()}/${ipv6PrefixLength}`;
}

/** Bucket keys name an address as `<limit>:address:<address>`; those count by limitedAddress. */
function grouped(buckets: FailureBucket[], ipv6PrefixLength: number): FailureBucket[] {
  return buckets.map((bucket) => {
    const at = bucket.key.indexOf(':address:');
    if (at < 0) return bucket;
    const address = bucket.key.slice(at + ':address:'.length);
    return { ...bucket, key: `${bucket.key.slice(0, at)}:address:${limitedAddress(address, ipv6PrefixLength)}` };
  });
}

/** A FailureLimiter whose address buckets count IPv6 clients by their network (RATE_LIMIT_IPV6_PREFIX). */
export class AddressGroupingLimiter extends FailureLimiter implements OnApplicationShutdown {
  constructor(
    private readonly inner: FailureLimiter,
    private readonly ipv6PrefixLength: number,
  ) {
    super();
  }

  retryAfterSec(buckets: FailureBucket[]): Promise<number> {
    return this.inner.retryAfterSec(grouped(buckets, this.ipv6PrefixLength));
  }

  recordFailure(buckets: FailureBucket[]): Promise<void> {
    return this.inner.recordFailure(grouped(buckets, this.ipv6PrefixLength));
  }

  acquire(buckets: FailureBucket[]): Promise<number> {
    return this.inner.acquire(grouped(buckets, this.ipv6PrefixLength));
  }

  refund(buckets: FailureBucket[]): Promise<void> {
    return this.inner.refund(grouped(buckets, this.ipv6PrefixLength));
  }

  async onApplicationShutdown(): Promise<void> {
    await (this.inner as Partial<OnApplicationShutdown>).onApplicationShutdown?.();
  }
}
