import { bearer, getMe, login, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer } from '../support/customers.js';
import { expectProblem } from '../support/problems.js';

/**
 * Two applications in one process (as the tests' two instances are), each with its own keys:
 * each guard authenticates with its own application's strategy, never with the one passport's
 * process-wide registry of names last heard of. Otherwise "two instances" tests would exercise
 * one instance's keys and caches only.
 */
describe('each application authenticates with its own strategies', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('a device token is accepted by the application that issued it and refused by the other', async () => {
    for (const [issuer, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const device = await registerDevice(issuer.api);
      const { data } = await login(issuer.api, device.deviceId, device.deviceSecret);
      expect((await getMe(issuer.api, data!.accessToken)).response.status).toBe(200);
      expectProblem(await getMe(other.api, data!.accessToken), 401, 'UNAUTHORIZED');
    }
  });

  it('a customer token is accepted by the application that issued it and refused by the other', async () => {
    for (const [issuer, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const customer = await aVerifiedCustomer(issuer);
      expect((await issuer.api.GET('/api/v1/users/me', { headers: bearer(customer.accessToken) })).response.status).toBe(200);
      expectProblem(await other.api.GET('/api/v1/users/me', { headers: bearer(customer.accessToken) }), 401, 'UNAUTHORIZED');
    }
  });
});
