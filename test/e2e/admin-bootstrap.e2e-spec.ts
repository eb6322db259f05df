import { startTestApp, type TestApp } from '../support/create-test-app.js';
import { customerAuth, loginCustomer, signUp } from '../support/customers.js';
import { createTestDatabase } from '../support/postgres.js';
import { buildService, runService, scratchDir } from '../support/service-process.js';

/** Same keys for both instances, as production has: tokens of the first stay verifiable. */
const keys = { DEVICE_JWT_SECRET: 'd'.repeat(40), CUSTOMER_JWT_SECRET: 'c'.repeat(40), SECRET_PEPPER: 'p'.repeat(40) };
const admin = { ADMIN_EMAIL: 'Root@Example.com', ADMIN_PASSWORD: 'admin-password-1' };

describe('ADMIN_EMAIL naming an account that already exists', () => {
  let database: { url: string; drop: () => Promise<void> };
  let running: TestApp | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await running?.close();
    await database.drop();
  });

  it('makes it the administrator and revokes the sessions of whoever signed up with that address', async () => {
    running = await startTestApp(database.url, keys);
    const squatter = await signUp(running, { email: 'root@example.com', password: 'squatter-password' });
    const tokens = await loginCustomer(running.api, squatter.email, 'squatter-password');
    await running.close();

    running = await startTestApp(database.url, { ...keys, ...admin });
    const oldAccess = await running.api.GET('/api/v1/users/me', { headers: customerAuth(tokens.accessToken) });
    expect(oldAccess.response.status).toBe(401);
    const oldRefresh = await running.api.POST('/api/v1/auth/refresh', { body: { refreshToken: tokens.refreshToken } });
    expect(oldRefresh.response.status).toBe(401);
    const oldPassword = await running.api.POST('/api/v1/auth/login', { body: { email: squatter.email, password: 'squatter-password' } });
    expect(oldPassword.response.status).toBe(401);

    const adminTokens = await loginCustomer(running.api, admin.ADMIN_EMAIL, admin.ADMIN_PASSWORD);
    const me = await running.api.GET('/api/v1/users/me', { headers: customerAuth(adminTokens.accessToken) });
    expect(me.data).toMatchObject({ userId: squatter.userId, email: 'root@example.com', role: 'admin', emailVerified: true });
  });

  it('keeps the administrator sessions across a restart with the same password', async () => {
    const tokens = await loginCustomer(running!.api, admin.ADMIN_EMAIL, admin.ADMIN_PASSWORD);
    await running!.close();
    running = await startTestApp(database.url, { ...keys, ...admin });
    const me = await running.api.GET('/api/v1/users/me', { headers: customerAuth(tokens.accessToken) });
    expect(me.response.status).toBe(200);
  });
});

describe('ADMIN_PASSWORD under the customers\' password rule', () => {
  let main = '';

  beforeAll(async () => {
    main = await buildService();
  }, 180_000);

  it.each([
    ['one of the most used passwords', 'password123'],
    ['a character counting up', '0123456789'],
    ['the e-mail address in it', 'rootadmin!42'],
  ])('stops the start, naming the variable and never its value: %s', async (_case, password) => {
    const service = runService(main, { DATA_DIR: scratchDir(), ADMIN_EMAIL: 'rootadmin@example.com', ADMIN_PASSWORD: password });
    expect(await service.exited).toBe(1);
    expect(service.output()).toContain('Configuration error');
    expect(service.output()).toContain('ADMIN_PASSWORD: too easy to guess');
    expect(service.output()).not.toContain(password);
  });
});
