import pg from 'pg';
import type { components } from '@device-cloud/client';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth, type SignedInCustomer } from '../support/customers.js';
import { expectProblem } from '../support/problems.js';
import { endPool } from '../support/postgres.js';
import { expectedRollup, iso, MINUTE, rollupRows, type TelemetryRecordBody } from '../support/telemetry.js';

type IngestBody = components['schemas']['IngestTelemetryRequest'];

const OBSERVER = 'dcs-test-observer';
const CHAOS_MS = 5000;
const KILL_EVERY_MS = 120;
const DEVICES = 6;
const BATCHES = 20;
const RECORDS = 25;
/** A request that takes this long is a hang: the test fails instead of waiting. */
const HANG_MS = 15_000;

interface Tally {
  statuses: Map<number, number>;
  slowest503: number;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * The service's PostgreSQL sessions are killed again and again (pg_terminate_backend, what an
 * operator or a failover does) while gateways upload telemetry and other callers work. Requests
 * hit by a kill fail cleanly with a 503 problem, never a 500 or a hang; retrying them succeeds;
 * every record of an acknowledged batch is stored exactly once, and a failed batch is stored
 * completely or not at all. The change feed's LISTEN session comes back by itself.
 */
describe('PostgreSQL sessions killed under load', () => {
  let t: TestApp;
  let database: string;
  /** Reads what is stored; spared by the kills (application_name), so checks never fail themselves. */
  let observer: pg.Pool;
  let killer: pg.Client;
  let devices: Registered[];
  let loginDevice: Registered;
  let customer: SignedInCustomer;
  const tally: Tally = { statuses: new Map(), slowest503: 0 };
  const start = Date.now() - 3 * 60 * MINUTE;

  beforeAll(async () => {
    t = await createTestApp({ DB_POOL_SIZE: '5' });
    t.db.on('error', () => undefined);
    database = (await t.db.query<{ name: string }>('SELECT current_database() AS name')).rows[0].name;
    const url = new URL(process.env.TEST_DATABASE_URL!);
    url.pathname = `/${database}`;
    observer = new pg.Pool({ connectionString: url.toString(), application_name: OBSERVER, max: 2 });
    killer = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await killer.connect();
    devices = await Promise.all(Array.from({ length: DEVICES }, () => registerDevice(t.api)));
    loginDevice = await registerDevice(t.api);
    customer = await aVerifiedCustomer(t);
  });

  afterAll(async () => {
    await killer?.end();
    await endPool(observer);
    await t?.close();
  });

  const killSessions = async (): Promise<number> => {
    const { rowCount } = await killer.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name <> $2',
      [database, OBSERVER],
    );
    return rowCount ?? 0;
  };

  const changeFeedPid = async (): Promise<number | undefined> => {
    const { rows } = await observer.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'device-cloud-change-feed'`, [
      database,
    ]);
    return rows[0]?.pid;
  };

  /** Calls the API, failing on a hang; counts the status; a 503 must be a problem with Retry-After. */
  async function call<T extends { response: Response; error?: unknown }>(send: (signal: AbortSignal) => Promise<T>, allowed: number[]): Promise<T> {
    const started = performance.now();
    const answer = await send(AbortSignal.timeout(HANG_MS));
    const status = answer.response.status;
    tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1);
    expect(allowed.concat(503)).toContain(status);
    if (status === 503) {
      expectProblem(answer, 503, 'SERVICE_UNAVAILABLE');
      expect(answer.response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      tally.slowest503 = Math.max(tally.slowest503, performance.now() - started);
    }
    return answer;
  }

  const batchOf = (d: number, b: number): TelemetryRecordBody[] =>
    Array.from({ length: RECORDS }, (_, i) => ({ ts: iso(start + (b * RECORDS + i) * 1000), metrics: { voltage: 3.3 + d / 100 + i / 1000, soc: (b * RECORDS + i) % 100 } }));

  /** How many records of the batch are stored: all or none, never some. */
  const storedOf = async (deviceId: string, batch: TelemetryRecordBody[]): Promise<number> => {
    const { rows } = await observer.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = $1 AND ts = ANY($2::timestamptz[])', [
      deviceId,
      batch.map((record) => record.ts),
    ]);
    return rows[0].n;
  };

  /** One gateway: uploads its batches in order, each retried after a 503 until it is acknowledged. */
  async function gateway(d: number, failedBatches: number[]): Promise<void> {
    const device = devices[d];
    for (let b = 0; b < BATCHES; b++) {
      const batch = batchOf(d, b);
      for (let attempt = 1; ; attempt++) {
        const answer = await call((signal) => t.api.POST('/api/v1/telemetry', { body: { records: batch } as IngestBody, headers: bearer(device.accessToken), signal }), [200]);
        if (answer.response.status === 200) {
          expect(answer.data!.accepted + answer.data!.duplicates).toBe(RECORDS);
          expect(answer.data!.rejected).toEqual([]);
          break;
        }
        failedBatches.push(await storedOf(device.deviceId, batch));
        expect(attempt).toBeLessThan(100);
        // Sooner than Retry-After asks, to keep the test short.
        await sleep(20 + Math.random() * 80);
      }
    }
  }

  /** Other callers at the same time: a gateway logging in, reporting OTA events (a transaction) and polling its config; a customer's dashboard. */
  async function others(until: () => boolean): Promise<void> {
    while (!until()) {
      const { deviceId, deviceSecret, accessToken } = loginDevice;
      const event = { ts: iso(Date.now() - 1000), type: 'check' as const, fromVersion: '0.1.4' };
      await call((signal) => t.api.POST('/api/v1/ota/events', { body: { events: [event] }, headers: bearer(accessToken), signal }), [200]);
      await call((signal) => t.api.POST('/api/v1/device/login', { body: { deviceId, deviceSecret }, signal }), [200]);
      await call((signal) => t.api.GET('/api/v1/device/config', { headers: bearer(devices[0].accessToken), signal }), [200]);
      await call((signal) => t.api.GET('/api/v1/dashboard/devices', { headers: customerAuth(customer.accessToken), signal }), [200]);
    }
  }

  it('answers 503 to requests whose session was killed, stores acknowledged and failed batches whole, and recovers', async () => {
    const feedBefore = await changeFeedPid();
    expect(feedBefore).toBeDefined();

    let chaos = true;
    let kills = 0;
    let sweeps = 0;
    const killing = (async () => {
      const ends = Date.now() + CHAOS_MS;
      while (Date.now() < ends) {
        kills += await killSessions();
        sweeps += 1;
        await sleep(KILL_EVERY_MS);
      }
      chaos = false;
    })();
    const failedBatches: number[] = [];
    await Promise.all([killing, ...devices.map((_, d) => gateway(d, failedBatches)), others(() => !chaos), others(() => !chaos)]);
    // Gateways may finish before the chaos ends; the others keep calling until it does.
    await killing;

    // The kills did hit the service, and what they hit answered 503, never 500.
    expect(kills).toBeGreaterThan(sweeps / 2);
    expect(tally.statuses.get(503) ?? 0).toBeGreaterThan(0);
    expect([...tally.statuses.keys()].sort()).toEqual(expect.arrayContaining([200, 503]));
    expect(tally.statuses.has(500)).toBe(false);
    expect(tally.slowest503).toBeLessThan(5000);
    // A failed batch left all of its records or none.
    expect(failedBatches.filter((stored) => stored !== 0 && stored !== RECORDS)).toEqual([]);

    // Every acknowledged record exactly once, and rollups that count each once.
    for (const [d, device] of devices.entries()) {
      const { rows } = await observer.query<{ total: number; distinct: number }>(
        'SELECT count(*)::int AS total, count(DISTINCT (battery_id, ts))::int AS distinct FROM telemetry WHERE device_id = $1',
        [device.deviceId],
      );
      expect(rows[0]).toEqual({ total: BATCHES * RECORDS, distinct: BATCHES * RECORDS });
      const sent = Array.from({ length: BATCHES }, (_, b) => batchOf(d, b)).flat();
      expect(await rollupRows(observer, device.deviceId)).toEqual(expectedRollup(sent));
    }

    // The change feed was killed too, and listens again on a new session.
    let feedAfter = await changeFeedPid();
    for (let waited = 0; (feedAfter === undefined || feedAfter === feedBefore) && waited < 10_000; waited += 100) {
      await sleep(100);
      feedAfter = await changeFeedPid();
    }
    expect(feedAfter).toBeDefined();
    expect(feedAfter).not.toBe(feedBefore);
    expect((await t.api.GET('/health/ready')).response.status).toBe(200);
    process.stdout.write(
      `sessions killed: ${kills} in ${sweeps} sweeps; answers ${JSON.stringify(Object.fromEntries(tally.statuses))}; slowest 503 ${Math.round(tally.slowest503)} ms; failed batches ${failedBatches.length} (${failedBatches.filter((n) => n === RECORDS).length} of them stored whole)\n`,
    );
  }, 90_000);
});
