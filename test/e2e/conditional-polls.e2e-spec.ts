import jwt from 'jsonwebtoken';
import { bearer, refresh, registerDevice } from '../support/builders.js';
import { aCustomer } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';

/**
 * Polls with If-None-Match are answered before Nest's pipeline when nothing changed
 * (NotModifiedShortcuts). That shortcut must refuse exactly what the device guard refuses.
 */
describe.each([
  ['GET /api/v1/device/config', '/api/v1/device/config' as const],
  ['GET /api/v1/ota/latest', '/api/v1/ota/latest' as const],
])('%s with If-None-Match', (_name, path) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  async function aPollingGateway() {
    const registered = await registerDevice(t.api);
    const first = await t.api.GET(path, { headers: bearer(registered.accessToken) });
    expect(first.response.status).toBe(200);
    return { registered, etag: first.response.headers.get('etag')! };
  }

  it('304 with the ETag and no body while nothing changed, on every repetition', async () => {
    const { registered, etag } = await aPollingGateway();

    for (let i = 0; i < 3; i++) {
      const { response } = await t.api.GET(path, { headers: { ...bearer(registered.accessToken), 'if-none-match': etag } });
      expect(response.status).toBe(304);
      expect(response.headers.get('etag')).toBe(etag);
      expect(response.headers.get('cache-control')).toBe('private, no-cache');
      expect(await response.text()).toBe('');
    }
  });

  it('a revoked token with the current ETag: 401, not 304', async () => {
    const { registered, etag } = await aPollingGateway();
    // Refresh-token reuse (a token two generations old) voids every token of the device.
    const second = await refresh(t.api, registered.refreshToken);
    expect((await refresh(t.api, second.data!.refreshToken)).response.status).toBe(200);
    expect((await refresh(t.api, registered.refreshToken)).response.status).toBe(401);

    const answer = await t.api.GET(path, { headers: { ...bearer(registered.accessToken), 'if-none-match': etag } });

    expectProblem(answer, 401, 'UNAUTHORIZED');
  });

  it('no token, a customer token, a token signed with another key, expired, without exp or issued in the future, with the current ETag: 401', async () => {
    const { registered, etag } = await aPollingGateway();
    const customer = await aCustomer(t);
    const claims = jwt.decode(registered.accessToken) as Record<string, unknown>;
    const forged = jwt.sign({ ...claims }, 'another-key-another-key-another-key', { algorithm: 'HS256', header: { alg: 'HS256', typ: 'at+jwt' } });
    const expired = jwt.sign({ ...claims, iat: 1_000, exp: 2_000 }, t.secrets.deviceJwtSecret, { algorithm: 'HS256', header: { alg: 'HS256', typ: 'at+jwt' } });
    const { exp: _exp, ...withoutExp } = claims;
    // Signed from a string, so jsonwebtoken adds no claims of its own.
    const neverExpiring = jwt.sign(JSON.stringify(withoutExp), t.secrets.deviceJwtSecret, { algorithm: 'HS256', header: { alg: 'HS256', typ: 'at+jwt' } });
    const now = Math.floor(Date.now() / 1000);
    const issuedAhead = jwt.sign(JSON.stringify({ ...claims, iat: now + 60, exp: now + 360 }), t.secrets.deviceJwtSecret, { algorithm: 'HS256', header: { alg: 'HS256', typ: 'at+jwt' } });

    for (const authorization of [
      undefined,
      `Bearer ${customer.accessToken}`,
      `Bearer ${forged}`,
      `Bearer ${expired}`,
      `Bearer ${neverExpiring}`,
      `Bearer ${issuedAhead}`,
      `Basic ${registered.accessToken}`,
    ]) {
      const headers = { 'if-none-match': etag, ...(authorization ? { authorization } : {}) };
      expectProblem(await t.api.GET(path, { headers }), 401, 'UNAUTHORIZED');
    }
  });
});
