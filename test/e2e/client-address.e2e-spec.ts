import { createTestApp, type TestApp } from '../support/create-test-app.js';

/** Per-address limits must count the real client: X-Forwarded-For only from a trusted proxy. */
async function failedLogin(t: TestApp, forwardedFor: string): Promise<number> {
  const { response } = await t.api.POST('/api/v1/device/login', {
    body: { deviceId: `gw-unknown-${Math.random().toString(36).slice(2)}`, deviceSecret: 'wrong-secret' },
    headers: { 'x-forwarded-for': forwardedFor },
  });
  return response.status;
}

const limits = { LOGIN_MAX_FAILURES_PER_ADDRESS: '2', LOGIN_MAX_FAILURES_PER_DEVICE: '100' };

describe('behind a proxy named in TRUST_PROXY', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ ...limits, TRUST_PROXY: '127.0.0.1' });
  });
  afterAll(() => t.close());

  it('limits each forwarded client address on its own', async () => {
    expect(await failedLogin(t, '203.0.113.7')).toBe(401);
    expect(await failedLogin(t, '203.0.113.7')).toBe(401);
    expect(await failedLogin(t, '203.0.113.7')).toBe(429);
    expect(await failedLogin(t, '203.0.113.8')).toBe(401);
  });

  it('counts an IPv6 client by its /64: other addresses of that network share its limit, the next network does not', async () => {
    expect(await failedLogin(t, '2001:db8:7:1::10')).toBe(401);
    expect(await failedLogin(t, '2001:db8:7:1:ffff::20')).toBe(401);
    expect(await failedLogin(t, '2001:db8:7:1:abcd:1234:5678:9')).toBe(429);
    expect(await failedLogin(t, '2001:db8:7:2::10')).toBe(401);
  });
});

describe('RATE_LIMIT_IPV6_PREFIX=128', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ ...limits, TRUST_PROXY: '127.0.0.1', RATE_LIMIT_IPV6_PREFIX: '128' });
  });
  afterAll(() => t.close());

  it('counts single IPv6 addresses', async () => {
    expect(await failedLogin(t, '2001:db8:7:1::10')).toBe(401);
    expect(await failedLogin(t, '2001:db8:7:1::10')).toBe(401);
    expect(await failedLogin(t, '2001:db8:7:1::11')).toBe(401);
    expect(await failedLogin(t, '2001:db8:7:1::10')).toBe(429);
  });
});

describe('without TRUST_PROXY', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(limits);
  });
  afterAll(() => t.close());

  it('ignores X-Forwarded-For, so a client cannot escape its limit by forging it', async () => {
    expect(await failedLogin(t, '198.51.100.1')).toBe(401);
    expect(await failedLogin(t, '198.51.100.2')).toBe(401);
    const { response, error } = await t.api.POST('/api/v1/device/login', {
      body: { deviceId: 'gw-any', deviceSecret: 'wrong-secret' },
      headers: { 'x-forwarded-for': '198.51.100.3' },
    });
    expect(response.status).toBe(429);
    expect(error?.code).toBe('RATE_LIMITED');
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
