import pg from 'pg';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { ReadReplicas } from '../../src/shared/database/read-replicas.js';
import { aClaimedDevice, aCustomer, type SignedIn } from '../support/claim-fixtures.js';
import { sharedSecrets, startTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { replicatedPostgres, type ReplicatedPostgres } from '../support/replicated-postgres.js';
import { parseExposition, samplesOf } from '../support/prometheus.js';
import { freePort } from '../support/service-process.js';
import { history, HOUR, ingestAll, iso, MINUTE } from '../support/telemetry.js';

/**
 * Read replicas on a real streaming replica (a primary and a standby of this file's own). Two
 * instances share the pair: `tolerant` accepts a replica up to 10 minutes behind (so a paused
 * replica keeps serving it: what it reads from there shows), `strict` only 300 ms (so a paused
 * replica is soon skipped: the primary serves its reads). `tolerant` also has a replica address
 * where nothing listens, which it must skip without a single failed read.
 */
describe('read replicas', () => {
  const database = 'dcs_replicas';
  let servers: ReplicatedPostgres;
  let tolerant: TestApp;
  let strict: TestApp;
  let primary: pg.Client;
  let owner: SignedIn;
  let deviceId: string;
  let deviceToken: string;
  /** An hour that has ended: history over it may be tagged. */
  const end = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
  const start = end - 3 * HOUR;

  beforeAll(async () => {
    servers = await replicatedPostgres();
    primary = new pg.Client({ connectionString: servers.primaryUrl('postgres') });
    await primary.connect();
    await primary.query(`CREATE DATABASE ${database}`);
    const nowhere = `postgres://postgres@127.0.0.1:${await freePort()}/${database}`;
    const secrets = sharedSecrets();
    tolerant = await startTestApp(servers.primaryUrl(database), {
      ...secrets,
      DATABASE_REPLICA_URLS: `${servers.replicaUrl(database)}, ${nowhere}`,
      REPLICA_MAX_LAG_MS: '600000',
      REPLICA_CHECK_INTERVAL_MS: '50',
      METRICS_PORT: '0',
    });
    strict = await startTestApp(servers.primaryUrl(database), { ...secrets, DATABASE_REPLICA_URLS: servers.replicaUrl(database), REPLICA_MAX_LAG_MS: '300', REPLICA_CHECK_INTERVAL_MS: '50' });
    owner = await aCustomer(tolerant);
    const device = await aClaimedDevice(tolerant, owner);
    deviceId = device.body.deviceId;
    deviceToken = device.registered.accessToken;
    // Two hours of a battery: charge, then discharge.
    await ingestAll(tolerant.api, deviceToken, [
      { ts: iso(start + 10 * MINUTE), metrics: { soc: 50, current: 5, voltage: 12, temperature: 20 } },
      { ts: iso(start + 40 * MINUTE), metrics: { soc: 60, current: 5, voltage: 12.2, temperature: 21 } },
      { ts: iso(start + 70 * MINUTE), metrics: { soc: 55, current: -3, voltage: 12.1, temperature: 22 } },
    ]);
  }, 120_000);

  afterAll(async () => {
    await tolerant?.close();
    await strict?.close();
    await primary?.end();
    await servers?.remove();
  }, 60_000);

  /** Every answer that may come from a replica, as the dashboard gets it. */
  async function lagTolerantReads(t: TestApp): Promise<Record<string, unknown>> {
    const headers = owner.headers;
    const path = { deviceId };
    const range = { from: iso(start), to: iso(end) };
    const ok = <T>(answer: { data?: T; response: Response }, what: string): T => {
      if (answer.response.status !== 200) throw new Error(`${what} answered ${answer.response.status}`);
      return answer.data as T;
    };
    const exported = await fetch(`${t.baseUrl}/api/v1/dashboard/devices/${deviceId}/telemetry/export?from=${range.from}&to=${range.to}`, { headers });
    return {
      series: ok(await history(t.api, headers, deviceId, { ...range, bucket: '300' }), 'history'),
      raw: ok(await history(t.api, headers, deviceId, { ...range, bucket: 'raw' }), 'raw history'),
      export: exported.status === 200 ? await exported.text() : exported.status,
      energy: ok(await t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/energy', { params: { path: { ...path, batteryId: 'main' }, query: { ...range, bucket: '1h' } }, headers }), 'energy'),
      health: ok(await t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/health', { params: { path: { ...path, batteryId: 'main' }, query: range }, headers }), 'health'),
      events: ok(await t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId } }, headers }), 'events'),
      audit: ok(await t.api.GET('/api/v1/dashboard/devices/{deviceId}/audit', { params: { path }, headers }), 'audit'),
      alerts: ok(await t.api.GET('/api/v1/dashboard/alerts', { params: { query: { deviceId } }, headers }), 'alerts'),
      devices: ok(await t.api.GET('/api/v1/dashboard/devices', { headers }), 'devices'),
    };
  }

  /** What /metrics says of the tolerant instance's replicas: serving (1 or 0, with why) and the lag gauge's presence. */
  const scraped = async () => {
    const samples = parseExposition(await (await fetch(`http://127.0.0.1:${tolerant.app.get(MetricsServer).address()!.port}/metrics`)).text());
    return replicaStates(tolerant).map(({ name }) => ({
      serving: samplesOf(samples, 'dcs_db_replica_serving', { replica: name }).map((sample) => [sample.labels.reason, sample.value]),
      lagKnown: samplesOf(samples, 'dcs_db_replica_lag_seconds', { replica: name }).length === 1,
    }));
  };
  const replicaStates = (t: TestApp) => t.app.get(ReadReplicas).states();
  const serving = (t: TestApp) => eventually(() => expect(replicaStates(t)[0]).toMatchObject({ skipped: null }), 20_000);
  const deviceName = async (t: TestApp) => (await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers: owner.headers })).data?.name;

  /** The replica has replayed everything the primary had written when this was called. */
  async function replayed(): Promise<void> {
    const [{ lsn }] = (await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows;
    const replica = new pg.Client({ connectionString: servers.replicaUrl('postgres') });
    await replica.connect();
    try {
      await eventually(async () => expect((await replica.query<{ done: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done', [lsn])).rows[0].done).toBe(true), 20_000);
    } finally {
      await replica.end();
    }
  }

  it('reads that may lag come from the replica, everything else from the primary; a lagging replica is skipped; a history ETag never hides newer data', async () => {
    const rename = (name: string) => tolerant.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body: { name }, headers: owner.headers });
    expect((await rename('Before')).response.status).toBe(200);
    await serving(tolerant);
    await serving(strict);
    // Energy's stale hours are recomputed on the primary by the first read of them, then replicated.
    await lagTolerantReads(strict);
    await replayed();
    // The replica has everything now: both instances read the same answers from it.
    const before = await lagTolerantReads(strict);
    expect(await lagTolerantReads(tolerant)).toEqual(before);
    const tagged = await history(tolerant.api, owner.headers, deviceId, { from: iso(start), to: iso(end), bucket: '300' });
    const etag = tagged.response.headers.get('etag');
    expect(etag).toMatch(/^"/);

    await servers.pauseReplay();
    // On the primary: a record that charges and opens the default temperature-high alert (55 °C for 60 s), and a new name.
    await ingestAll(tolerant.api, deviceToken, [
      { ts: iso(start + 100 * MINUTE), metrics: { soc: 52, current: -4, voltage: 12, temperature: 60 } },
      { ts: iso(start + 101 * MINUTE), metrics: { soc: 51, current: -4, voltage: 11.9, temperature: 61 } },
    ]);
    expect((await rename('After')).response.status).toBe(200);

    // Everything else reads the primary: the device's own page has the new name at once.
    expect(await deviceName(tolerant)).toBe('After');
    // The strict instance finds the replica too far behind and reads the primary: every answer has the changes.
    await eventually(async () => expect(replicaStates(strict)[0]).toMatchObject({ skipped: 'lagging' }));
    const after = await eventually(async () => {
      const reads = await lagTolerantReads(strict);
      expect((reads.alerts as { items: unknown[] }).items).toHaveLength(1);
      return reads;
    });
    for (const [route, answer] of Object.entries(after)) expect({ route, changed: JSON.stringify(answer) !== JSON.stringify(before[route]) }).toEqual({ route, changed: true });
    expect((after.devices as { items: Array<{ name: string }> }).items[0].name).toBe('After');
    // The tolerant instance still reads the paused replica: every answer as it was before the changes.
    expect(replicaStates(tolerant)[0]).toMatchObject({ skipped: null });
    expect(await lagTolerantReads(tolerant)).toEqual(before);
    const unchanged = await history(tolerant.api, { ...owner.headers, 'if-none-match': etag! }, deviceId, { from: iso(start), to: iso(end), bucket: '300' });
    expect(unchanged.response.status).toBe(304);
    // A write the tolerant instance makes goes to the primary: acknowledging the alert it cannot list yet.
    const [alert] = (after.alerts as { items: Array<{ alertId: string }> }).items;
    expect((await tolerant.api.POST('/api/v1/dashboard/alerts/{alertId}/acknowledge', { params: { path: { alertId: alert.alertId } }, headers: owner.headers })).response.status).toBe(200);

    await servers.resumeReplay();
    await replayed();
    // Once the replica has the new data, the old tag no longer matches: 200 with the new series.
    await eventually(async () => {
      const fresh = await history(tolerant.api, { ...owner.headers, 'if-none-match': etag! }, deviceId, { from: iso(start), to: iso(end), bucket: '300' });
      expect(fresh.response.status).toBe(200);
      expect(fresh.data).toEqual(after.series);
    });
    await serving(strict);
    const caughtUp = await lagTolerantReads(tolerant);
    expect(caughtUp).toEqual(await lagTolerantReads(strict));
    expect(caughtUp.series).toEqual(after.series);
  }, 120_000);

  it('a replica that stops is skipped without a failed read, and serves again once it is back; one where nothing listens never serves', async () => {
    await serving(tolerant);
    const expected = await lagTolerantReads(strict);
    expect(replicaStates(tolerant)[1]).toMatchObject({ skipped: 'unreachable', lagMs: null });
    expect(await scraped()).toEqual([
      { serving: [['serving', 1]], lagKnown: true },
      { serving: [['unreachable', 0]], lagKnown: false },
    ]);

    await servers.stopReplica();
    // Reads go on, answered by the primary, from the first one on.
    expect(await lagTolerantReads(tolerant)).toEqual(expected);
    await eventually(() => expect(replicaStates(tolerant)[0]).toMatchObject({ skipped: expect.stringMatching(/^(unreachable|failed)$/) }));
    expect(await lagTolerantReads(tolerant)).toEqual(expected);
    await eventually(async () => expect((await scraped())[0]).toEqual({ serving: [['unreachable', 0]], lagKnown: false }));

    await servers.startReplica();
    await serving(tolerant);
    expect(await lagTolerantReads(tolerant)).toEqual(expected);
    expect(replicaStates(tolerant)[1]).toMatchObject({ skipped: 'unreachable' });
  }, 120_000);
});
