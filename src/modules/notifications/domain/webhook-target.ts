import ipaddr from 'ipaddr.js';
import { DomainError } from '../../../shared/domain-error.js';

/** Why a URL was refused; the sender tells a private address apart from a malformed URL. */
export type WebhookUrlRefusal = 'too-long' | 'not-a-url' | 'scheme' | 'userinfo' | 'host' | 'private-address';

export class WebhookUrlNotAllowedError extends DomainError {
  constructor(
    readonly reason: WebhookUrlRefusal,
    detail: string,
  ) {
    // The URL itself is never repeated: its query string may carry the receiver's token.
    super('WEBHOOK_URL_NOT_ALLOWED', 'invalid', `The webhook URL is not allowed: ${detail}.`, { errors: [{ field: 'url', message: detail }] });
  }
}

export interface WebhookTargetOptions {
  /** Development and tests only: also `http:` and loopback, private and other non-public addresses. */
  allowPrivateTargets: boolean;
}

const MAX_URL_LENGTH = 2048;
const MAX_NAME_LENGTH = 253;
/** Letters, digits, hyphens inside; underscores too, which some DNS names carry. */
const DNS_LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
const IPV4_LITERAL = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * A webhook URL fit to be registered and called. The WHATWG parser does the parsing (what a
 * client would send is what it understands), so the host comes out lower-cased, IDNs as punycode
 * and IPv4 in dotted-quad form whatever way it was written.
 */
export class WebhookTarget {
  private constructor(
    /** The normalised URL. */
    readonly href: string,
    readonly protocol: 'https:' | 'http:',
    /** DNS name, or IP address without the IPv6 brackets. */
    readonly hostname: string,
    readonly isIpLiteral: boolean,
    readonly port: number,
    /** Value of the Host header: the name and any explicit port, as in the URL. */
    readonly hostHeader: string,
    /** Path and query, as sent in the request line. */
    readonly path: string,
  ) {}

  static parse(raw: string, options: WebhookTargetOptions): WebhookTarget {
    if (raw.length > MAX_URL_LENGTH) throw new WebhookUrlNotAllowedError('too-long', `it is longer than ${MAX_URL_LENGTH} characters`);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new WebhookUrlNotAllowedError('not-a-url', 'it is not an absolute URL');
    }
    if (url.href.length > MAX_URL_LENGTH) throw new WebhookUrlNotAllowedError('too-long', `it is longer than ${MAX_URL_LENGTH} characters`);

    const allowed = options.allowPrivateTargets ? ['https:', 'http:'] : ['https:'];
    if (!allowed.includes(url.protocol)) throw new WebhookUrlNotAllowedError('scheme', `it must use ${allowed.map((scheme) => scheme.slice(0, -1)).join(' or ')}`);
    if (url.username !== '' || url.password !== '') throw new WebhookUrlNotAllowedError('userinfo', 'it must not contain a user name or password');

    const isIpv6 = url.hostname.startsWith('[');
    const hostname = isIpv6 ? url.hostname.slice(1, -1) : url.hostname;
    const isIpLiteral = isIpv6 || IPV4_LITERAL.test(hostname);
    if (!isIpLiteral && !isDnsName(hostname)) throw new WebhookUrlNotAllowedError('host', 'its host must be a DNS name or an IP address');
    // Names are checked where they are resolved, at each delivery; a literal can be refused now.
    if (isIpLiteral && !options.allowPrivateTargets && !isPublicAddress(hostname)) {
      throw new WebhookUrlNotAllowedError('private-address', 'its host is not a public address');
    }

    const protocol = url.protocol as 'https:' | 'http:';
    const port = url.port === '' ? (protocol === 'https:' ? 443 : 80) : Number(url.port);
    return new WebhookTarget(url.href, protocol, hostname, isIpLiteral, port, url.host, `${url.pathname}${url.search}`);
  }
}

function isDnsName(hostname: string): boolean {
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return name.length > 0 && name.length <= MAX_NAME_LENGTH && name.split('.').every((label) => DNS_LABEL.test(label));
}

/**
 * Whether a webhook may be sent to this address: a globally routable unicast address. Anything
 * else, and anything that does not parse as a plain IPv4 or IPv6 address, is refused. IPv6 forms
 * that carry an IPv4 address (mapped, NAT64, 6to4) are judged by that address, since traffic to
 * them reaches it.
 */
export function isPublicAddress(ip: string): boolean {
  // Only the dotted quad: `127.1` or `0x7f.0.0.1` are refused rather than interpreted.
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) return isPublicIpv4(ipaddr.IPv4.parse(ip));
  if (ipaddr.IPv6.isValid(ip)) return isPublicIpv6(ipaddr.IPv6.parse(ip));
  return false;
}

/**
 * ipaddr.js names every special-purpose block of the IANA registry: loopback, private, link-local
 * (169.254.169.254, cloud metadata), CGNAT, 0/8, multicast, broadcast, 240/4, documentation,
 * benchmarking (198.18/15), and a few anycast ones (AS112, AMT) refused along with them.
 */
function isPublicIpv4(address: ipaddr.IPv4): boolean {
  return address.range() === 'unicast';
}

function isPublicIpv6(address: ipaddr.IPv6): boolean {
  const [first, second, third, fourth, fifth, sixth, seventh, eighth] = address.parts;
  if (address.isIPv4MappedAddress()) return isPublicIpv4(address.toIPv4Address());
  // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052); the local-use 64:ff9b:1::/48 stays refused.
  if (first === 0x64 && second === 0xff9b && third === 0 && fourth === 0 && fifth === 0 && sixth === 0) {
    return isPublicIpv4(ipv4Of(seventh, eighth));
  }
  if (first === 0x2002) return isPublicIpv4(ipv4Of(second, third));
  // Outside 2000::/3 nothing is allocated as global unicast (this also refuses the deprecated
  // IPv4-compatible ::a.b.c.d).
  return address.range() === 'unicast' && (first & 0xe000) === 0x2000;
}

function ipv4Of(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}
