import { createHmac, randomBytes } from 'node:crypto';
import { aRegistration, login, refresh, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth, signUp } from '../support/customers.js';

/**
 * Every answer that carries a token or a secret forbids caching (RFC 6749 §5.1): Cache-Control
 * no-store, and Pragma no-cache for HTTP/1.0 caches.
 */
describe('answers carrying tokens or secrets are not cached', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  function expectNoStore(response: Response): void {
    expect({ cacheControl: response.headers.get('cache-control'), pragma: response.headers.get('pragma') }).toEqual({ cacheControl: 'no-store', pragma: 'no-cache' });
  }

  it('POST /api/v1/device/register (device secret and token pair)', async () => {
    const { response, data } = await t.api.POST('/api/v1/device/register', { body: aRegistration() });

    expect(response.status).toBe(201);
    expect(data?.deviceSecret).toEqual(expect.any(String));
    expectNoStore(response);
  });

  it('POST /api/v1/device/login', async () => {
    const device = await registerDevice(t.api);

    const { response } = await login(t.api, device.deviceId, device.deviceSecret);

    expect(response.status).toBe(200);
    expectNoStore(response);
  });

  it('POST /api/v1/device/token/refresh, a repeat within the grace too', async () => {
    const device = await registerDevice(t.api);

    for (let i = 0; i < 2; i++) {
      const { response } = await refresh(t.api, device.refreshToken);
      expect(response.status).toBe(200);
      expectNoStore(response);
    }
  });

  it('POST /api/v1/auth/login', async () => {
    const customer = await signUp(t);

    const { response } = await t.api.POST('/api/v1/auth/login', { body: { email: customer.email, password: customer.password } });

    expect(response.status).toBe(200);
    expectNoStore(response);
  });

  it('POST /api/v1/auth/refresh', async () => {
    const customer = await aVerifiedCustomer(t);

    const { response } = await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.refreshToken } });

    expect(response.status).toBe(200);
    expectNoStore(response);
  });

  it('POST /api/v1/auth/verify-email (the request carried the link token)', async () => {
    const customer = await signUp(t);
    const token = randomBytes(32).toString('base64url');
    const tokenHash = createHmac('sha256', t.secrets.pepper).update(token, 'utf8').digest('hex');
    await t.db.query(`INSERT INTO email_verification_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, now() + interval '1 hour')`, [tokenHash, customer.userId]);

    const { response } = await t.api.POST('/api/v1/auth/verify-email', { body: { token } });

    expect(response.status).toBe(200);
    expectNoStore(response);
  });

  it('not on answers without one (GET /api/v1/users/me)', async () => {
    const customer = await aVerifiedCustomer(t);

    const { response } = await t.api.GET('/api/v1/users/me', { headers: customerAuth(customer.accessToken) });

    expect(response.status).toBe(200);
    expect(response.headers.get('pragma')).toBeNull();
  });
});
