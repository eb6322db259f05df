import pg from 'pg';
import { registerDevice, type Registered } from '../support/builders.js';
import { startTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth, type SignedInCustomer } from '../support/customers.js';
import { eventually } from '../support/eventually.js';
import { fileScanner } from '../support/leak-scan.js';
import { expectProblem } from '../support/problems.js';
import { stoppablePostgres, type StoppablePostgres } from '../support/stoppable-postgres.js';
import { ingest, iso, MINUTE, telemetryRows } from '../support/telemetry.js';

const READ_ONLY_DETAIL = 'The database takes no writes right now (read-only, or a standby during a failover). Retry later.';

/**
 * The primary turns read-only under a running service whose sessions stay open — what a managed
 * PostgreSQL does when its disk is nearly full, and what a demoted primary that the endpoint still
 * reaches looks like to a writer. Writes are answered 503 with Retry-After (an outage, never a
 * 500), reads keep working, and writes work again by themselves once the server takes them. The
 * server is this file's own (ALTER SYSTEM reaches every open session), so no other test sees it.
 */
describe('PostgreSQL turns read-only under the service', () => {
  const database = 'dcs_read_only';
  let postgres: StoppablePostgres;
  let t: TestApp;
  let superuser: pg.Client;
  let device: Registered;
  let customer: SignedInCustomer;
  let sent = 0;
  let acknowledged = 0;
  /** One record a second apart, each new; counts the acknowledged ones. */
  const upload = async () => {
    const answer = await ingest(t.api, device.accessToken, [{ ts: iso(Date.now() - 10 * MINUTE + ++sent * 1000), metrics: { soc: 50 } }]);
    if (answer.response.status === 200) acknowledged += 1;
    return answer;
  };
  const readOnly = async (on: boolean) => {
    await superuser.query(on ? 'ALTER SYSTEM SET default_transaction_read_only = on' : 'ALTER SYSTEM RESET default_transaction_read_only');
    await superuser.query('SELECT pg_reload_conf()');
  };

  beforeAll(async () => {
    postgres = await stoppablePostgres();
    await postgres.createDatabase(database);
    t = await startTestApp(postgres.url(database));
    superuser = new pg.Client({ connectionString: postgres.url('postgres') });
    await superuser.connect();
    device = await registerDevice(t.api);
    customer = await aVerifiedCustomer(t);
  }, 60_000);

  afterAll(async () => {
    await superuser?.end();
    await t?.close();
    await postgres?.remove();
  }, 60_000);

  it('answers writes 503 with Retry-After and reads 200 while it is read-only, and writes again by itself once it is not', async () => {
    expect((await upload()).response.status).toBe(200);
    const logStart = fileScanner.logLines().length;

    await readOnly(true);
    // The reload reaches each open session at its next statement: soon, not at once.
    await eventually(async () => expect((await upload()).response.status).toBe(503));
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const refused = await upload();
      statuses.push(refused.response.status);
      const problem = expectProblem(refused, 503, 'SERVICE_UNAVAILABLE');
      expect(problem.detail).toBe(READ_ONLY_DETAIL);
      expect(refused.response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    }
    expect(statuses).toEqual(statuses.map(() => 503));
    expect((await t.api.GET('/api/v1/dashboard/devices', { headers: customerAuth(customer.accessToken) })).response.status).toBe(200);
    expect((await t.api.GET('/api/v1/users/me', { headers: customerAuth(customer.accessToken) })).response.status).toBe(200);
    const loggedOnce = fileScanner
      .logLines()
      .slice(logStart)
      .map((line) => JSON.parse(line) as { msg: string; cause?: string })
      .filter((line) => line.cause === 'read-only' && line.msg.startsWith('Database read-only'));
    expect(loggedOnce).toHaveLength(1);

    await readOnly(false);
    await eventually(async () => expect((await upload()).response.status).toBe(200));
    // What was acknowledged is stored, and nothing that was refused.
    expect(await telemetryRows(t.db, device.deviceId)).toHaveLength(acknowledged);
    expect(sent - acknowledged).toBeGreaterThanOrEqual(11);
  });
});
