import pg from 'pg';
import { TELEMETRY_CHANNEL } from '../../src/modules/stream/infrastructure/postgres-live-bus.js';
import { aClaimedDevice, aCustomer, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { startTwoInstances, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { aRedisKeyPrefix, deleteRedisKeys, redisForTests, TEST_REDIS_URL } from '../support/redis.js';
import { dataOf, openSse, type SseMessage, type SseStream } from '../support/sse.js';
import { ingest, iso } from '../support/telemetry.js';

/*
 * The dashboard stream behind a load balancer: two instances on one PostgreSQL database. What a
 * gateway uploads to instance A reaches a dashboard connected to instance B within a second, over
 * PostgreSQL LISTEN/NOTIFY by default and over Redis pub/sub with REDIS_URL (that part needs a
 * Redis, like two-instances.e2e-spec.ts: skipped with a message without one, required in CI).
 */
const redisAnswers = await redisForTests('the dashboard stream across instances over Redis');

const streams: SseStream[] = [];
afterEach(() => {
  for (const opened of streams.splice(0)) opened.close();
});

async function stream(t: TestApp, who: SignedIn | null, query: Record<string, string> = {}): Promise<SseStream> {
  const url = new URL('/api/v1/dashboard/stream', t.baseUrl);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  const opened = await openSse(url.toString(), who ? { authorization: `Bearer ${who.accessToken}` } : {});
  streams.push(opened);
  expect(opened.status).toBe(200);
  return opened;
}

/**
 * A device `who` claims on `t`, once its device.claimed event is on `live`: a point in that
 * stream after everything committed before the claim (events and share changes reach an instance
 * over one LISTEN connection, in commit order).
 */
async function aClaimSeen(t: TestApp, who: SignedIn, live: SseStream): Promise<void> {
  const device = await aClaimedDevice(t, who);
  await live.next((message) => message.event === 'device.claimed' && dataOf<{ deviceId: string }>(message).deviceId === device.body.deviceId, 2000);
}

const telemetryWith = (deviceId: string, soc: number) => (message: SseMessage) =>
  message.event === 'telemetry' && dataOf<{ deviceId: string; metrics: { soc: number } }>(message).deviceId === deviceId && dataOf<{ metrics: { soc: number } }>(message).metrics.soc === soc;

function acrossInstances(name: string, settings: () => Record<string, string>, cleanUp: () => Promise<void> = async () => {}) {
  describe(name, () => {
    let a: TestApp;
    let b: TestApp;
    let close: () => Promise<void>;

    beforeAll(async () => {
      ({ a, b, close } = await startTwoInstances(settings()));
    });
    afterAll(async () => {
      await close?.();
      await cleanUp();
    });

    it('a record ingested on A reaches a subscriber on B within 1 s of the acknowledgement, and one on A too, once each', async () => {
      const owner = await aCustomer(a);
      const device = await aClaimedDevice(a, owner);
      const onB = await stream(b, owner);
      const onA = await stream(a, owner);
      let ts = Date.now() - 60_000;
      const latencies: number[] = [];
      for (let soc = 1; soc <= 5; soc++) {
        const { response } = await ingest(a.api, device.registered.accessToken, [{ ts: iso((ts += 1000)), metrics: { soc } }]);
        expect(response.status).toBe(200);
        const acknowledged = performance.now();
        const received = await onB.next(telemetryWith(device.body.deviceId, soc), 2000);
        latencies.push(received.at - acknowledged);
        await onA.next(telemetryWith(device.body.deviceId, soc), 2000);
      }
      process.stdout.write(`Across instances (${name}): push latency A→B ${latencies.map((ms) => Math.round(ms)).join(', ')} ms\n`);
      expect(Math.max(...latencies)).toBeLessThan(1000);
      expect(onB.messages.filter((message) => message.event === 'telemetry')).toHaveLength(5);
      expect(onA.messages.filter((message) => message.event === 'telemetry')).toHaveLength(5);
    });

    it('an event recorded on A reaches B with its id; a ticket issued by A opens a stream on B, once', async () => {
      const owner = await aCustomer(a);
      const { data } = await a.api.POST('/api/v1/dashboard/stream/tickets', { headers: owner.headers });
      const onB = await stream(b, null, { ticket: data!.ticket });
      const device = await aRegisteredDevice(a);
      await claim(a, owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode });
      const claimed = await onB.next((message) => message.event === 'device.claimed', 2000);
      expect(claimed.id).toMatch(/^evt_[1-9][0-9]*$/);
      expect(dataOf(claimed)).toMatchObject({ type: 'device.claimed', deviceId: device.body.deviceId });

      const again = await openSse(new URL(`/api/v1/dashboard/stream?ticket=${data!.ticket}`, a.baseUrl).toString());
      expect(again.status).toBe(401);
    });

    it('a device shared on A reaches the sharee’s stream on B; revoked on A, it stops there as soon as B hears of the revocation', async () => {
      const owner = await aCustomer(a);
      const sharee = await aCustomer(a);
      const device = await aClaimedDevice(a, owner);
      const onB = await stream(b, sharee);
      const ownerOnB = await stream(b, owner);
      const { data: shared } = await a.api.POST('/api/v1/user/devices/{deviceId}/shares', {
        params: { path: { deviceId: device.body.deviceId } },
        body: { email: sharee.email, role: 'viewer' },
        headers: owner.headers,
      });
      let ts = Date.now() - 30_000;
      await eventually(async () => {
        expect((await ingest(a.api, device.registered.accessToken, [{ ts: iso((ts += 1000)), metrics: { soc: 40 } }])).response.status).toBe(200);
        await onB.next(telemetryWith(device.body.deviceId, 40), 300);
      }, 3000);

      const revoked = await a.api.DELETE('/api/v1/user/devices/{deviceId}/shares/{shareId}', { params: { path: { deviceId: device.body.deviceId, shareId: shared!.shareId } }, headers: owner.headers });
      expect(revoked.response.status).toBe(204);
      await aClaimSeen(a, sharee, onB);
      expect((await ingest(a.api, device.registered.accessToken, [{ ts: iso((ts += 1000)), metrics: { soc: 41 } }])).response.status).toBe(200);
      await ownerOnB.next(telemetryWith(device.body.deviceId, 41), 2000);
      await aClaimSeen(a, sharee, onB);
      expect(onB.messages.filter(telemetryWith(device.body.deviceId, 41))).toEqual([]);
    });

    it('holds no database connection per subscriber: 40 more streams, no more connections', async () => {
      const owner = await aCustomer(b);
      await stream(b, owner);
      // The accounts first: creating them at once may grow the pool, which is not what is measured.
      const viewers = await Promise.all(Array.from({ length: 4 }, () => aCustomer(b)));
      const connections = async () => (await b.db.query<{ count: string }>('SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()')).rows[0].count;
      const before = Number(await connections());
      for (const viewer of viewers) for (let i = 0; i < 10; i++) await stream(b, viewer);
      const after = Number(await connections());
      expect(after - before).toBeLessThanOrEqual(2);
    });
  });
}

acrossInstances('over PostgreSQL LISTEN/NOTIFY', () => ({}));

if (redisAnswers) {
  const keyPrefix = aRedisKeyPrefix();
  acrossInstances('over Redis pub/sub (REDIS_URL)', () => ({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: keyPrefix }), () => deleteRedisKeys(keyPrefix));
}

describe('telemetry is passed between instances only while one of them has streams (PostgreSQL NOTIFY)', () => {
  let a: TestApp;
  let b: TestApp;
  let close: () => Promise<void>;
  let listener: pg.Client;
  const heard: string[] = [];

  beforeAll(async () => {
    ({ a, b, close } = await startTwoInstances());
    listener = new pg.Client({ connectionString: a.db.options.connectionString });
    await listener.connect();
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`LISTEN ${TELEMETRY_CHANNEL}`);
  });
  afterAll(async () => {
    await listener?.end();
    await close?.();
  });

  it('no stream anywhere: a flush sends nothing; once B has a stream, A passes its records on to it', async () => {
    const owner = await aCustomer(a);
    const device = await aClaimedDevice(a, owner);
    const ts = Date.now() - 60_000;
    expect((await ingest(a.api, device.registered.accessToken, [{ ts: iso(ts), metrics: { soc: 1 } }])).response.status).toBe(200);

    const onB = await stream(b, owner);
    expect((await ingest(a.api, device.registered.accessToken, [{ ts: iso(ts + 1000), metrics: { soc: 2 } }])).response.status).toBe(200);
    await onB.next(telemetryWith(device.body.deviceId, 2), 2000);

    // NOTIFY arrives in commit order: once the second record is heard, the first would have been.
    await eventually(() => expect(heard.some((payload) => payload.includes('"soc":2'))).toBe(true));
    expect(heard.filter((payload) => payload.includes('"soc":1'))).toEqual([]);
    const announced = heard.findIndex((payload) => payload.endsWith('\nwatching'));
    expect(announced).toBeGreaterThanOrEqual(0);
    expect(announced).toBeLessThan(heard.findIndex((payload) => payload.includes('"soc":2')));
    expect(onB.messages.filter((message) => message.event === 'telemetry')).toHaveLength(1);
  });
});
