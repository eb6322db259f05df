import createClient from 'openapi-fetch';
import type { paths } from '@device-cloud/client';
import { aRegistration, bearer, login, refresh, registerDevice } from '../support/builders.js';
import { claim } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer } from '../support/customers.js';
import { fileScanner, LeakScanner } from '../support/leak-scan.js';
import { expectProblem } from '../support/problems.js';

/**
 * The leak scan of test/support/leak-scan.ts: it catches what it should (planted leaks, on a
 * scanner of their own so this file's real scan stays clean), and a whole journey comes out clean.
 */
describe('the leak scan of responses and log lines', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  /** A scanner of its own that sees the answers of its own client (not the app's log lines). */
  function aPlantingScanner() {
    const scanner = new LeakScanner();
    const api = createClient<paths>({ baseUrl: t.baseUrl });
    api.use(scanner.middleware);
    return { scanner, api };
  }

  describe('reports', () => {
    it('a password hash and a device-secret HMAC read from the database, in a log line', async () => {
      const { scanner, api } = aPlantingScanner();
      const customer = await aVerifiedCustomer({ api, db: t.db });
      const device = await registerDevice(api);
      await scanner.harvest(t.db);
      const passwordHash = (await t.db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = $1', [customer.userId])).rows[0].password_hash;
      const secretHash = (await t.db.query<{ secret_hash: string }>('SELECT secret_hash FROM devices WHERE device_id = $1', [device.deviceId])).rows[0].secret_hash;
      expect(scanner.scan()).toEqual([]);

      scanner.recordLog(JSON.stringify({ level: 30, msg: 'user saved', hash: passwordHash }));
      scanner.recordLog(`{"level":30,"msg":"device saved","secretHash":"${secretHash}"}`);

      expect(scanner.scan()).toEqual([
        expect.objectContaining({ what: 'an argon2 hash', where: 'log line' }),
        expect.objectContaining({ what: 'devices.secret_hash from the database', where: 'log line', excerpt: expect.stringContaining(secretHash) }),
      ]);
    });

    it('a refresh token, a device secret and a claim code anywhere but the answer that issued them', async () => {
      const { scanner, api } = aPlantingScanner();
      const body = aRegistration();
      const device = await registerDevice(api, body);
      expect(scanner.scan()).toEqual([]);

      scanner.recordLog(`device ${device.deviceId} refreshed with ${device.refreshToken}`);
      scanner.recordResponse('GET /api/v1/device/me → 200', JSON.stringify({ deviceId: device.deviceId, note: device.deviceSecret }), { admin: false });
      scanner.recordLog(`claim attempt with code ${body.claimCode}`);

      expect(scanner.scan().map(({ what, where }) => ({ what, where }))).toEqual([
        { what: 'the refreshToken issued by POST /api/v1/device/register', where: 'log line' },
        { what: 'the deviceSecret issued by POST /api/v1/device/register', where: 'answer to GET /api/v1/device/me → 200' },
        { what: 'the claimCode sent to POST /api/v1/device/register', where: 'log line' },
      ]);
    });

    it("another user's e-mail in an answer, and any user's e-mail in a log line; not the caller's own", async () => {
      const { scanner, api } = aPlantingScanner();
      const ada = await aVerifiedCustomer({ api, db: t.db });
      const bob = await aVerifiedCustomer({ api, db: t.db });
      // Each learns whose address is whose from their own /users/me answer.
      await api.GET('/api/v1/users/me', { headers: bearer(ada.accessToken) });
      await api.GET('/api/v1/users/me', { headers: bearer(bob.accessToken) });
      expect(scanner.scan()).toEqual([]);

      scanner.recordResponse('GET /api/v1/users/me → 200', JSON.stringify({ email: bob.email }), { userId: ada.userId, admin: false });
      scanner.recordResponse('GET /api/v1/users/me → 200', JSON.stringify({ email: ada.email }), { userId: ada.userId, admin: false });
      scanner.recordLog(`{"msg":"signed in","email":"${ada.email}"}`);

      expect(scanner.scan().map(({ what, where }) => ({ what, where }))).toEqual([
        { what: `the e-mail address of user ${bob.userId}`, where: 'answer to GET /api/v1/users/me → 200' },
        { what: `the e-mail address of user ${ada.userId}`, where: 'log line' },
      ]);
    });

    it("a member's e-mail outside the routes of the organizations that invited it; not to its fellow members", async () => {
      const { scanner, api } = aPlantingScanner();
      const ada = await aVerifiedCustomer({ api, db: t.db });
      const bob = await aVerifiedCustomer({ api, db: t.db });
      const eve = await aVerifiedCustomer({ api, db: t.db });
      for (const who of [ada, bob, eve]) await api.GET('/api/v1/users/me', { headers: bearer(who.accessToken) });
      const created = await api.POST('/api/v1/organizations', { body: { name: 'Ada & Co' }, headers: bearer(ada.accessToken) });
      const other = await api.POST('/api/v1/organizations', { body: { name: 'Eve Ltd' }, headers: bearer(eve.accessToken) });
      const organizationId = created.data!.organizationId;
      const otherId = other.data!.organizationId;
      await api.POST('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, body: { email: bob.email, role: 'viewer' }, headers: bearer(ada.accessToken) });
      // Bob lists the members: Ada's address (she created it) and his own.
      await api.GET('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, headers: bearer(bob.accessToken) });
      expect(scanner.scan()).toEqual([]);

      scanner.recordResponse('GET /api/v1/organizations/{organizationId}/members → 200', JSON.stringify({ email: bob.email }), { userId: eve.userId, admin: false, organizationId: otherId });
      scanner.recordResponse('GET /api/v1/organizations → 200', JSON.stringify({ email: bob.email }), { userId: ada.userId, admin: false });

      expect(scanner.scan().map(({ what, where }) => ({ what, where }))).toEqual([
        { what: `the e-mail address of user ${bob.userId}`, where: 'answer to GET /api/v1/organizations/{organizationId}/members → 200' },
        { what: `the e-mail address of user ${bob.userId}`, where: 'answer to GET /api/v1/organizations → 200' },
      ]);
    });

    it('each leak once: a second scan reports only what was captured since', async () => {
      const scanner = new LeakScanner();
      scanner.secret('planted-secret-value-0001', 'a planted secret');
      scanner.recordLog('one planted-secret-value-0001');

      expect(scanner.scan()).toHaveLength(1);
      expect(scanner.scan()).toEqual([]);
      scanner.recordLog('two planted-secret-value-0001');
      expect(scanner.scan()).toEqual([{ what: 'a planted secret', where: 'log line', excerpt: 'two planted-secret-value-0001' }]);
    });
  });

  it('a journey (register, customer login, claim, refreshes, device login, errors) leaves no leak in any answer or log line', async () => {
    const before = fileScanner.size;
    const body = aRegistration();
    const device = await registerDevice(t.api, body);
    const customer = await aVerifiedCustomer(t);
    const other = await aVerifiedCustomer(t);

    expect((await claim(t, { headers: bearer(customer.accessToken) }, { deviceId: body.deviceId, claimCode: body.claimCode! })).response.status).toBe(200);
    expectProblem(await claim(t, { headers: bearer(other.accessToken) }, { deviceId: body.deviceId, claimCode: body.claimCode! }), 409);
    expect((await t.api.GET('/api/v1/user/devices', { headers: bearer(customer.accessToken) })).response.status).toBe(200);
    const customerRefresh = await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.refreshToken } });
    expect(customerRefresh.response.status).toBe(200);
    // A repeat within the reuse grace gets the same pair again; a token two generations old is reuse.
    expect((await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customerRefresh.data!.refreshToken } })).response.status).toBe(200);
    expectProblem(await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.refreshToken } }), 401, 'INVALID_TOKEN');
    expect((await refresh(t.api, device.refreshToken)).response.status).toBe(200);
    expect((await login(t.api, device.deviceId, device.deviceSecret)).response.status).toBe(200);
    expectProblem(await login(t.api, device.deviceId, `${device.deviceSecret.slice(0, -2)}xx`), 401);
    expectProblem(await t.api.POST('/api/v1/auth/login', { body: { email: customer.email, password: `${customer.password}-wrong` } }), 401);
    // A taken address is answered like a new one: the answer echoes only the caller's own input.
    expect((await t.api.POST('/api/v1/auth/signup', { body: { email: other.email, password: 'another-long-password' } })).response.status).toBe(201);
    expectProblem(await t.api.POST('/api/v1/auth/signup', { body: { email: 'not-an-address', password: customer.password } }), 400, 'VALIDATION_FAILED');
    await t.api.POST('/api/v1/auth/logout', { body: { refreshToken: customerRefresh.data!.refreshToken } });

    await fileScanner.harvest(t.db);
    expect(fileScanner.scan()).toEqual([]);
    const after = fileScanner.size;
    expect(after.responses - before.responses).toBe(18);
    expect(after.logLines - before.logLines).toBeGreaterThanOrEqual(17);
    expect(fileScanner.texts('log').some((line) => line.includes('"path":"/api/v1/auth/login"'))).toBe(true);
  });
});
