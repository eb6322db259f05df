import pg from 'pg';
import { aRegistration, bearer, login, registerDevice, type Registered } from '../support/builders.js';
import { startTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth, type SignedInCustomer } from '../support/customers.js';
import { fileScanner } from '../support/leak-scan.js';
import { expectProblem } from '../support/problems.js';
import { stoppablePostgres, type StoppablePostgres } from '../support/stoppable-postgres.js';
import { ingest, iso, MINUTE, telemetryRows } from '../support/telemetry.js';

/**
 * PostgreSQL stops under a running service and comes back: requests that need it get a quick 503
 * problem with Retry-After (never a hang, a 500 or a 2xx), liveness stays up, readiness goes down,
 * and the same process serves again once PostgreSQL is back. The server is this file's own, so
 * stopping it disturbs no other test.
 */
describe('PostgreSQL stops and comes back', () => {
  const database = 'dcs_outage';
  let postgres: StoppablePostgres;
  let t: TestApp;
  let device: Registered;
  let customer: SignedInCustomer;
  let deviceSecret: string;
  const figures: Record<string, number> = {};
  /** Index of the first log line written once PostgreSQL was stopped. */
  let outageLogStart = 0;
  const outageLog = () => fileScanner.logLines().slice(outageLogStart).map((line) => JSON.parse(line) as { level: number; msg: string; cause?: string; refused?: number; res?: { statusCode: number } });

  const elapsed = async <T>(call: () => Promise<T>): Promise<{ answer: T; ms: number }> => {
    const started = performance.now();
    const answer = await call();
    return { answer, ms: Math.round(performance.now() - started) };
  };

  let sent = 0;
  /** Every kind of request that needs the database, as the callers of this service send them, with its answer when all is well. */
  const requests = (): Array<[string, number, () => Promise<{ response: Response; error?: unknown }>]> => [
    ['POST /api/v1/telemetry', 200, () => ingest(t.api, device.accessToken, [{ ts: iso(Date.now() - MINUTE - ++sent * 1000), metrics: { soc: 50 } }])],
    ['GET /api/v1/device/config', 200, () => t.api.GET('/api/v1/device/config', { headers: bearer(device.accessToken) })],
    ['POST /api/v1/device/login', 200, () => login(t.api, device.deviceId, deviceSecret)],
    ['POST /api/v1/device/register', 201, () => t.api.POST('/api/v1/device/register', { body: aRegistration() })],
    ['GET /api/v1/dashboard/devices', 200, () => t.api.GET('/api/v1/dashboard/devices', { headers: customerAuth(customer.accessToken) })],
    ['POST /api/v1/auth/login', 200, () => t.api.POST('/api/v1/auth/login', { body: { email: customer.email, password: customer.password } })],
  ];
  const ingestOne = () => requests()[0][2]();

  async function expectUnavailableQuickly(label: string, call: () => Promise<{ response: Response; error?: unknown }>): Promise<number> {
    const { answer, ms } = await elapsed(call);
    expect({ label, status: answer.response.status }).toEqual({ label, status: 503 });
    expectProblem(answer, 503, 'SERVICE_UNAVAILABLE');
    expect(answer.response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect((answer.error as { detail?: string }).detail).toBe('The database is not reachable. Retry later.');
    expect(ms).toBeLessThan(5000);
    return ms;
  }

  beforeAll(async () => {
    postgres = await stoppablePostgres();
    await postgres.createDatabase(database);
    t = await startTestApp(postgres.url(database));
    // The test's own pool loses its sessions when the server stops; that is expected here.
    t.db.on('error', () => undefined);
    device = await registerDevice(t.api);
    deviceSecret = device.deviceSecret;
    customer = await aVerifiedCustomer(t);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await postgres?.remove();
    process.stdout.write(`database outage figures (ms): ${JSON.stringify(figures)}\n`);
  }, 60_000);

  it('is ready and serves while PostgreSQL runs', async () => {
    expect((await t.api.GET('/health/ready')).response.status).toBe(200);
    expect((await ingestOne()).response.status).toBe(200);
  });

  it('answers every request that needs the database with a 503 problem and Retry-After within 5 s once it stops', async () => {
    outageLogStart = fileScanner.logLines().length;
    await postgres.stop();

    let slowest = 0;
    for (const [label, , call] of requests()) slowest = Math.max(slowest, await expectUnavailableQuickly(label, call));
    // Many at once: the pool refuses quickly too, none waits for another.
    const { answer: burst, ms: burstMs } = await elapsed(() => Promise.all(Array.from({ length: 30 }, ingestOne)));
    expect(burst.map((answer) => answer.response.status)).toEqual(burst.map(() => 503));
    expect(burstMs).toBeLessThan(5000);
    figures.slowest503 = slowest;
    figures.burstOf30 = burstMs;

    const live = await t.api.GET('/health/live');
    expect(live.response.status).toBe(200);
    const ready = await t.api.GET('/health/ready');
    expectProblem(ready, 503, 'SERVICE_UNAVAILABLE');
    expect(ready.response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  });

  it('stays quick while PostgreSQL stays down, and Swagger needs no database', async () => {
    await new Promise((done) => setTimeout(done, 2000));
    for (const [label, , call] of requests()) await expectUnavailableQuickly(label, call);
    const swagger = await fetch(`${t.baseUrl}/docs/openapi.json`);
    expect(swagger.status).toBe(200);
    // Read to the end: an unread answer of 1.3 MB keeps its connection busy, and closing the app waits for it.
    expect(((await swagger.json()) as { openapi?: string }).openapi).toMatch(/^3\./);
  });

  it('serves again within 30 s of PostgreSQL coming back, in the same process, and the change feed listens again', async () => {
    await postgres.start();
    const back = performance.now();

    let answer = await ingest(t.api, device.accessToken, [{ ts: iso(Date.now() - 2 * MINUTE), metrics: { soc: 51 } }]);
    while (answer.response.status !== 200 && performance.now() - back < 30_000) {
      expect(answer.response.status).toBe(503);
      await new Promise((done) => setTimeout(done, 100));
      answer = await ingest(t.api, device.accessToken, [{ ts: iso(Date.now() - 2 * MINUTE), metrics: { soc: 51 } }]);
    }
    figures.firstSuccessAfterRestart = Math.round(performance.now() - back);
    expect(answer.response.status).toBe(200);
    expect(answer.data).toEqual({ accepted: 1, duplicates: 0, rejected: [] });

    for (const [label, expected, call] of requests()) {
      const { response } = await call();
      expect({ label, status: response.status }).toEqual({ label, status: expected });
    }
    expect((await t.api.GET('/health/ready')).response.status).toBe(200);
    figures.readyAfterRestart = Math.round(performance.now() - back);

    const observer = new pg.Client({ connectionString: postgres.url(database) });
    await observer.connect();
    try {
      let listening = 0;
      while (listening === 0 && performance.now() - back < 30_000) {
        const { rows } = await observer.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'device-cloud-change-feed'`,
          [database],
        );
        listening = rows[0].n;
        if (listening === 0) await new Promise((done) => setTimeout(done, 100));
      }
      expect(listening).toBe(1);
      figures.changeFeedAfterRestart = Math.round(performance.now() - back);
    } finally {
      await observer.end();
    }
    // The record before the outage and the two after it; nothing from the refused requests.
    expect(await telemetryRows(t.db, device.deviceId)).toHaveLength(3);
    expect(figures.firstSuccessAfterRestart).toBeLessThan(30_000);
  }, 60_000);

  it('logged the outage once when it began and once when it ended, and no line of it as an error', () => {
    const lines = outageLog();
    const refused = lines.filter((line) => line.res?.statusCode === 503);
    expect(refused.length).toBeGreaterThan(40);
    // An expected fault: request lines at warn, no error level anywhere (pino: 40 warn, 50 error).
    expect(refused.every((line) => line.level === 40)).toBe(true);
    expect(lines.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([]);
    const began = lines.filter((line) => line.msg.startsWith('Database unreachable'));
    const ended = lines.filter((line) => line.msg === 'Database serving again');
    expect(began.map((line) => [line.level, line.cause])).toEqual([[40, 'unreachable']]);
    expect(ended.map((line) => [line.level, line.cause])).toEqual([[30, 'unreachable']]);
    expect(ended[0].refused).toBeGreaterThanOrEqual(refused.length - 2);
  });
});
