import fc from 'fast-check';
import { isPublicAddress, WebhookTarget, WebhookUrlNotAllowedError, type WebhookUrlRefusal } from './webhook-target.js';

const strict = { allowPrivateTargets: false };
const lax = { allowPrivateTargets: true };

function refusal(raw: string, options = strict): WebhookUrlNotAllowedError {
  try {
    WebhookTarget.parse(raw, options);
  } catch (error) {
    if (error instanceof WebhookUrlNotAllowedError) return error;
    throw error;
  }
  throw new Error(`${raw} was accepted`);
}

describe('isPublicAddress', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '9.255.255.255',
    '11.0.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '169.253.255.255',
    '172.15.255.255',
    '172.32.0.0',
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.254.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:82a::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('accepts %s', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
  });

  it.each([
    ['loopback', '127.0.0.1'],
    ['loopback, end of 127/8', '127.255.255.254'],
    ['private 10/8', '10.0.0.1'],
    ['private 172.16/12', '172.16.0.1'],
    ['private 172.16/12, last', '172.31.255.255'],
    ['private 192.168/16', '192.168.1.1'],
    ['link-local', '169.254.1.1'],
    ['cloud metadata', '169.254.169.254'],
    ['CGNAT 100.64/10', '100.64.0.1'],
    ['CGNAT 100.64/10, last', '100.127.255.255'],
    ['this network 0/8', '0.0.0.0'],
    ['this network 0/8, inside', '0.1.2.3'],
    ['multicast', '224.0.0.1'],
    ['multicast, last', '239.255.255.255'],
    ['broadcast', '255.255.255.255'],
    ['reserved 240/4', '240.0.0.1'],
    ['IETF protocol assignments', '192.0.0.8'],
    ['documentation TEST-NET-1', '192.0.2.1'],
    ['documentation TEST-NET-2', '198.51.100.1'],
    ['documentation TEST-NET-3', '203.0.113.1'],
    ['benchmarking 198.18/15', '198.18.0.1'],
    ['benchmarking 198.18/15, last', '198.19.255.255'],
    ['IPv6 loopback', '::1'],
    ['IPv6 unspecified', '::'],
    ['IPv6 unique-local fc00::/7', 'fc00::1'],
    ['IPv6 unique-local fd00::/8', 'fd12:3456:789a::1'],
    ['IPv6 link-local', 'fe80::1'],
    ['IPv6 link-local with a zone', 'fe80::1%eth0'],
    ['IPv6 site-local (deprecated)', 'fec0::1'],
    ['IPv6 multicast', 'ff02::1'],
    ['IPv6 documentation', '2001:db8::1'],
    ['IPv6 documentation 3fff::/20', '3fff::1'],
    ['IPv6 discard 100::/64', '100::1'],
    ['Teredo', '2001::1'],
    ['IPv6 outside 2000::/3', '4000::1'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-mapped loopback, hex', '::ffff:7f00:1'],
    ['IPv4-mapped metadata', '::ffff:169.254.169.254'],
    ['IPv4-mapped private', '::ffff:10.0.0.1'],
    ['IPv4-compatible loopback (deprecated)', '::127.0.0.1'],
    ['NAT64 of loopback', '64:ff9b::7f00:1'],
    ['NAT64 of private', '64:ff9b::10.0.0.1'],
    ['NAT64 local-use prefix', '64:ff9b:1::808:808'],
    ['6to4 of loopback', '2002:7f00:1::1'],
    ['6to4 of private', '2002:c0a8:101::1'],
    ['6to4 of metadata', '2002:a9fe:a9fe::1'],
  ])('refuses %s (%s)', (_reason, ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });

  it.each([
    ['nothing', ''],
    ['a name', 'localhost'],
    ['short IPv4 form', '127.1'],
    ['hexadecimal IPv4', '0x7f.0.0.1'],
    ['IPv4 as one number', '2130706433'],
    ['octal-looking IPv4', '010.0.0.1'],
    ['five parts', '8.8.8.8.8'],
    ['an out-of-range part', '8.8.8.256'],
    ['brackets', '[2606:4700:4700::1111]'],
    ['a port', '8.8.8.8:443'],
    ['spaces', ' 8.8.8.8'],
  ])('refuses what is not a plain address: %s (%j)', (_reason, text) => {
    expect(isPublicAddress(text)).toBe(false);
  });

  const octet = fc.integer({ min: 0, max: 255 });
  const ipv4 = fc.tuple(octet, octet, octet, octet);
  const hex = (high: number, low: number) => ((high << 8) | low).toString(16);

  it('judges every IPv6 form that carries an IPv4 address by that address', () => {
    fc.assert(
      fc.property(ipv4, ([a, b, c, d]) => {
        const expected = isPublicAddress(`${a}.${b}.${c}.${d}`);
        expect(isPublicAddress(`::ffff:${a}.${b}.${c}.${d}`)).toBe(expected);
        expect(isPublicAddress(`::ffff:${hex(a, b)}:${hex(c, d)}`)).toBe(expected);
        expect(isPublicAddress(`64:ff9b::${a}.${b}.${c}.${d}`)).toBe(expected);
        expect(isPublicAddress(`2002:${hex(a, b)}:${hex(c, d)}::1`)).toBe(expected);
      }),
    );
  });

  it.each([
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ])('refuses every address of %s/%i', (base, prefix) => {
    const start = base.split('.').reduce((value, part) => value * 256 + Number(part), 0);
    const hosts = fc.integer({ min: 0, max: 2 ** (32 - prefix) - 1 });
    fc.assert(
      fc.property(hosts, (host) => {
        const value = start + host;
        const ip = [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
        expect(isPublicAddress(ip)).toBe(false);
      }),
    );
  });
});

describe('WebhookTarget.parse', () => {
  it('takes an https URL apart for the request', () => {
    const target = WebhookTarget.parse('https://Hooks.Example.com/in/events?token=abc', strict);

    expect(target).toEqual(
      expect.objectContaining({
        href: 'https://hooks.example.com/in/events?token=abc',
        protocol: 'https:',
        hostname: 'hooks.example.com',
        isIpLiteral: false,
        port: 443,
        hostHeader: 'hooks.example.com',
        path: '/in/events?token=abc',
      }),
    );
  });

  it('keeps an explicit port in the Host header', () => {
    const target = WebhookTarget.parse('https://hooks.example.com:8443/', strict);

    expect([target.port, target.hostHeader, target.path]).toEqual([8443, 'hooks.example.com:8443', '/']);
  });

  it('turns an international name into its DNS form', () => {
    expect(WebhookTarget.parse('https://bücher.example/hook', strict).hostname).toBe('xn--bcher-kva.example');
  });

  it('accepts a public IPv6 literal and drops the brackets from the host name only', () => {
    const target = WebhookTarget.parse('https://[2606:4700:4700::1111]:8443/hook', strict);

    expect([target.hostname, target.isIpLiteral, target.hostHeader]).toEqual(['2606:4700:4700::1111', true, '[2606:4700:4700::1111]:8443']);
  });

  it('accepts a public IPv4 literal', () => {
    expect(WebhookTarget.parse('https://8.8.8.8/', strict)).toEqual(expect.objectContaining({ hostname: '8.8.8.8', isIpLiteral: true }));
  });

  it('accepts a name with a trailing dot, and single-label names, which are resolved like any other', () => {
    expect(WebhookTarget.parse('https://hooks.example.com./', strict).hostname).toBe('hooks.example.com.');
    expect(WebhookTarget.parse('https://intranet/', strict).hostname).toBe('intranet');
  });

  it('accepts URLs up to 2048 characters', () => {
    const prefix = 'https://hooks.example.com/';

    expect(WebhookTarget.parse(prefix + 'a'.repeat(2048 - prefix.length), strict).href).toHaveLength(2048);
  });

  it.each<[string, string, WebhookUrlRefusal]>([
    ['plain http', 'http://hooks.example.com/', 'scheme'],
    ['another scheme', 'ftp://hooks.example.com/', 'scheme'],
    ['javascript', 'javascript:alert(1)', 'scheme'],
    ['a file', 'file:///etc/passwd', 'scheme'],
    ['a user and password', 'https://user:pass@hooks.example.com/', 'userinfo'],
    ['a user', 'https://user@hooks.example.com/', 'userinfo'],
    ['no scheme', 'hooks.example.com/hook', 'not-a-url'],
    ['a relative path', '/hook', 'not-a-url'],
    ['nothing', '', 'not-a-url'],
    ['a space in the host', 'https://hooks example.com/', 'not-a-url'],
    ['a bad port', 'https://hooks.example.com:99999/', 'not-a-url'],
    ['2049 characters', 'https://hooks.example.com/' + 'a'.repeat(2049 - 26), 'too-long'],
    ['a character no DNS name has', 'https://hooks*.example.com/', 'host'],
    ['a label over 63 characters', `https://${'a'.repeat(64)}.example.com/`, 'host'],
    ['a label starting with a hyphen', 'https://-hooks.example.com/', 'host'],
    ['an empty label', 'https://hooks..example.com/', 'host'],
    ['loopback', 'https://127.0.0.1/', 'private-address'],
    ['loopback written as one number', 'https://2130706433/', 'private-address'],
    ['loopback in hexadecimal', 'https://0x7f.1/', 'private-address'],
    ['private', 'https://10.0.0.1/', 'private-address'],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data/', 'private-address'],
    ['IPv6 loopback', 'https://[::1]/', 'private-address'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/', 'private-address'],
    ['unspecified', 'https://0.0.0.0/', 'private-address'],
  ])('refuses %s', (_case, raw, reason) => {
    const error = refusal(raw);

    expect(error).toEqual(expect.objectContaining({ code: 'WEBHOOK_URL_NOT_ALLOWED', kind: 'invalid', reason }));
    expect(error.details.errors).toEqual([expect.objectContaining({ field: 'url' })]);
  });

  it.each([
    ['plain http', 'http://hooks.example.com/'],
    ['loopback', 'http://127.0.0.1:8080/'],
    ['localhost', 'http://localhost:8080/'],
    ['IPv6 loopback', 'https://[::1]/'],
    ['private', 'https://192.168.1.10/'],
  ])('with private targets allowed, accepts %s', (_case, raw) => {
    expect(WebhookTarget.parse(raw, lax).href).toBe(raw);
  });

  it('refuses other schemes and user info even with private targets allowed', () => {
    expect(refusal('ftp://127.0.0.1/', lax).reason).toBe('scheme');
    expect(refusal('http://user:pass@127.0.0.1/', lax).reason).toBe('userinfo');
  });

  it('says what is wrong without repeating the URL, whose query may hold a token', () => {
    const error = refusal('http://hooks.example.com/in?token=s3cret-token');

    expect(error.message).toBe('The webhook URL is not allowed: it must use https.');
    expect(JSON.stringify(error.details)).not.toContain('s3cret');
  });
});
