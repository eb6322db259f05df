import { bearer } from '../support/builders.js';
import { startTwoInstances, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, loginCustomer } from '../support/customers.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problems.js';

/**
 * The customer guard keeps accounts in their sessions in memory (CustomerSessions). Two instances
 * on one database: whatever ends a session or changes what the guard reads of an account, on
 * either instance or in the database directly, is honoured by both: at once on the instance that
 * made the change, and on the other as soon as the change channel says so.
 */
describe('customer sessions kept in memory, across two instances', () => {
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ a, b, close } = await startTwoInstances());
  });
  afterAll(async () => {
    await close?.();
  });

  const me = (t: TestApp, accessToken: string) => t.api.GET('/api/v1/users/me', { headers: bearer(accessToken) });
  const adminRoute = (t: TestApp, accessToken: string) => t.api.GET('/api/v1/admin/config/defaults', { headers: bearer(accessToken) });

  /** Both instances have served the token, so both hold the session in memory. */
  async function servedByBoth(accessToken: string): Promise<void> {
    for (const t of [a, b]) expect((await me(t, accessToken)).response.status).toBe(200);
  }

  it('logout on one instance: refused there at once, and on the other as soon as it hears; another session of the account keeps working', async () => {
    const customer = await aVerifiedCustomer(a);
    const other = await loginCustomer(a.api, customer.email, customer.password);
    await servedByBoth(customer.accessToken);
    await servedByBoth(other.accessToken);

    expect((await a.api.POST('/api/v1/auth/logout', { body: { refreshToken: customer.refreshToken } })).response.status).toBe(204);

    expectProblem(await me(a, customer.accessToken), 401, 'UNAUTHORIZED');
    await eventually(async () => expectProblem(await me(b, customer.accessToken), 401, 'UNAUTHORIZED'));
    for (const t of [a, b]) expect((await me(t, other.accessToken)).response.status).toBe(200);
  });

  it('a refresh token replayed after its successor was used voids every session, on both instances', async () => {
    const customer = await aVerifiedCustomer(a);
    await servedByBoth(customer.accessToken);
    const rotated = await b.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.refreshToken } });
    expect(rotated.response.status).toBe(200);
    // Rotation keeps the session: the old access token is still good on both.
    await servedByBoth(customer.accessToken);
    expect((await b.api.POST('/api/v1/auth/refresh', { body: { refreshToken: rotated.data!.refreshToken } })).response.status).toBe(200);

    expectProblem(await b.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.refreshToken } }), 401, 'INVALID_TOKEN');

    expectProblem(await me(b, customer.accessToken), 401, 'UNAUTHORIZED');
    await eventually(async () => expectProblem(await me(a, customer.accessToken), 401, 'UNAUTHORIZED'));
  });

  it.each([
    ['its token version raised', 'UPDATE users SET token_version = token_version + 1 WHERE id = $1'],
    ['its sessions revoked', 'UPDATE user_refresh_tokens SET revoked_at = now() WHERE user_id = $1'],
    ['its refresh tokens deleted', 'DELETE FROM user_refresh_tokens WHERE user_id = $1'],
    ['the account deleted', 'DELETE FROM users WHERE id = $1'],
  ])('an account changed in the database directly (%s) is refused by both instances', async (_change, sql) => {
    const customer = await aVerifiedCustomer(a);
    await servedByBoth(customer.accessToken);

    await a.db.query(sql, [customer.userId]);

    for (const t of [a, b]) await eventually(async () => expectProblem(await me(t, customer.accessToken), 401, 'UNAUTHORIZED'));
  });

  it('a role granted in the database is seen by both instances: the admin route answers 403, then 200', async () => {
    const customer = await aVerifiedCustomer(a);
    for (const t of [a, b]) expectProblem(await adminRoute(t, customer.accessToken), 403, 'FORBIDDEN');

    await a.db.query("UPDATE users SET role = 'admin' WHERE id = $1", [customer.userId]);

    for (const t of [a, b]) await eventually(async () => expect((await adminRoute(t, customer.accessToken)).response.status).toBe(200));
  });
});
