import { isIPv4, isIPv6 } from 'node:net';
import type { OnApplicationShutdown } from '@nestjs/common';
import { FailureLimiter, type FailureBucket } from './failure-limiter.js';

/**
 * What a rate limit counts for a client address: an IPv4 address as it is; an IPv6 address by its
 * network of `ipv6PrefixLength` bits (a subscriber gets a whole /64 and picks addresses in it at
 * will, so counting single addresses would be no limit there), written `2001:db8:1:2::/64`; an
 * IPv4 address mapped into IPv6 (`::ffff:192.0.2.1`) as the IPv4 address. Anything else unchanged.
 */
export function limitedAddress(address: string, ipv6PrefixLength: number): string {
  if (isIPv4(address) || !isIPv6(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped && isIPv4(mapped[1])) return mapped[1];
  const groups = expand(address);
  const kept = groups.map((group, index) => {
    const bits = Math.max(0, Math.min(16, ipv6PrefixLength - index * 16));
    return bits === 16 ? group : bits === 0 ? 0 : group & (0xffff << (16 - bits)) & 0xffff;
  });
  return `${compress(kept)}/${ipv6PrefixLength}`;
}

/** The eight 16-bit groups of a valid IPv6 address (an embedded IPv4 tail included). */
function expand(address: string): number[] {
  let text = address.toLowerCase().split('%')[0];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1].split('.').map(Number);
    text = `${text.slice(0, -v4[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === null ? [] : Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...middle, ...right].map((group) => parseInt(group, 16));
}

/** RFC 5952 text: lower case, the longest run of two or more zero groups as `::`. */
function compress(groups: number[]): string {
  let best = { start: -1, length: 0 };
  for (let start = 0; start < 8; ) {
    if (groups[start] !== 0) {
      start += 1;
      continue;
    }
    let end = start;
    while (end < 8 && groups[end] === 0) end += 1;
    if (end - start > best.length && end - start >= 2) best = { start, length: end - start };
    start = end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (best.start < 0) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.length).join(':')}`;
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
