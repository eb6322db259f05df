import { readFileSync } from 'node:fs';
import { socTrend } from '../../examples/dashboard-client.js';
import { aClaimedDevice, aCustomer, CUSTOMER_PASSWORD } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { ingestAll, iso, MINUTE } from '../support/telemetry.js';

/** The client example of docs/api.md is examples/dashboard-client.ts verbatim, and it works. */
describe('docs/api.md: the frontend client example', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('is the file examples/dashboard-client.ts, word for word', () => {
    const example = readFileSync('examples/dashboard-client.ts', 'utf8').trim();

    expect(readFileSync('docs/api.md', 'utf8')).toContain(example);
  });

  it("returns the state-of-charge trend of the customer's first device", async () => {
    const owner = await aCustomer(t);
    const device = await aClaimedDevice(t, owner);
    const now = Date.now();
    await ingestAll(t.api, device.registered.accessToken, [
      { ts: iso(now - 30 * MINUTE), metrics: { soc: 80 } },
      { ts: iso(now - 20 * MINUTE), metrics: { soc: 70 } },
    ]);

    const points = await socTrend(t.baseUrl, owner.email, CUSTOMER_PASSWORD);

    expect(points.reduce((sum, point) => sum + point.count, 0)).toBe(2);
    expect(Math.max(...points.map((point) => point.max))).toBe(80);
  });
});
