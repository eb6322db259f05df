import { rmSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { aRegistration, registerDevice } from '../support/builders.js';
import { startTestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth } from '../support/customers.js';
import { eventually } from '../support/eventually.js';
import { createTestDatabase, endPool } from '../support/postgres.js';
import { buildService, freePort, killService, scratchDir, startService, waitUntilReady, type Running } from '../support/service-process.js';
import { DAY, expectedRollup, ingestAll, iso, type TelemetryRecordBody } from '../support/telemetry.js';

/**
 * Compaction moves one device's day per transaction, so the service killed with SIGKILL in the
 * middle of it leaves each settled day compacted or still rows, never half, every record there
 * once; the next start compacts the rest.
 */

const DAYS = 6;
const BATTERIES = ['main', 'pack-2'];
const STEP_MS = 10_000;
const RECORDS_PER_DAY = (DAY / STEP_MS) * BATTERIES.length;

interface Reading {
  battery_id: string;
  ts: Date;
  metrics: Record<string, number>;
}

interface DayLayout {
  day: Date;
  /** Records still rows of `telemetry`. */
  records: number;
  /** Five-minute rollup rows. */
  slots: number;
  /** Rows of `telemetry_days`. */
  compact: number;
  /** Rows of `telemetry_hours`. */
  hours: number;
}

const keyOf = (batteryId: string, ts: number) => `${batteryId}|${iso(ts)}`;

describe('compaction killed with SIGKILL in the middle of a day, then restarted', () => {
  let main = '';
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let db: pg.Pool;
  let service: Running | undefined;
  let deviceId = '';
  let env: Record<string, string>;
  const dataDir = scratchDir();
  /** Six whole UTC days that ended three days ago or more: settled under the default 48 hours. */
  const start = Math.floor(Date.now() / DAY) * DAY - (DAYS + 3) * DAY;
  const end = start + DAYS * DAY;

  /** Values with one to three decimals, doubles that need 17 digits and a metric some records lack; timestamps with milliseconds. */
  function recordAt(i: number, batteryId: string): TelemetryRecordBody {
    const pack = BATTERIES.indexOf(batteryId);
    const metrics: Record<string, number> = {
      voltage: Math.round((51 + Math.sin(i / 90) * 1.3 + pack * 0.25) * 1000) / 1000,
      current: Math.round((-12 + ((i * 13 + pack) % 29) * 0.85) * 100) / 100,
      soc: Math.round((60 + Math.sin(i / 400) * 35) * 10) / 10,
    };
    if (i % 5 === pack) metrics.ratio = (i % 3) * 0.1 + 0.2;
    return { ts: iso(start + i * STEP_MS + (i % 997)), batteryId, metrics };
  }

  const records: TelemetryRecordBody[] = [];
  for (let i = 0; i < (end - start) / STEP_MS; i++) for (const batteryId of BATTERIES) records.push(recordAt(i, batteryId));
  const sent = new Map(records.map((record) => [keyOf(record.batteryId ?? 'main', Date.parse(record.ts)), record.metrics]));

  /** Five-minute rollup rows of each day, for the days the kill left as rows. */
  const slotsPerDay = new Map<number, number>();
  for (const slot of expectedRollup(records)['5m']) {
    const day = Math.floor(slot.bucket.getTime() / DAY) * DAY;
    slotsPerDay.set(day, (slotsPerDay.get(day) ?? 0) + 1);
  }

  async function startChild(): Promise<Running> {
    const port = Number(env.PORT);
    service = await startService(main, env);
    await waitUntilReady(port);
    return service;
  }

  async function layout(): Promise<DayLayout[]> {
    const { rows } = await db.query<DayLayout>(
      `SELECT g.day,
              (SELECT count(*)::int FROM telemetry t WHERE t.device_id = $1 AND t.ts >= g.day AND t.ts < g.day + interval '1 day') AS records,
              (SELECT count(*)::int FROM telemetry_rollup_5m r WHERE r.device_id = $1 AND r.bucket >= g.day AND r.bucket < g.day + interval '1 day') AS slots,
              (SELECT count(*)::int FROM telemetry_days d WHERE d.device_id = $1 AND d.day = g.day) AS compact,
              (SELECT count(*)::int FROM telemetry_hours h WHERE h.device_id = $1 AND h.hour >= g.day AND h.hour < g.day + interval '1 day') AS hours
         FROM generate_series($2::timestamptz, $3::timestamptz - interval '1 day', interval '1 day') AS g (day)
        ORDER BY g.day`,
      [deviceId, new Date(start), new Date(end)],
    );
    return rows;
  }

  const asRows = (day: Date): DayLayout => ({ day, records: RECORDS_PER_DAY, slots: slotsPerDay.get(day.getTime())!, compact: 0, hours: 0 });
  const asCompacted = (day: Date): DayLayout => ({ day, records: 0, slots: 0, compact: BATTERIES.length, hours: 24 * BATTERIES.length });

  /** Every sent record is stored once, with the values sent: counted in SQL, then compared one by one. */
  async function expectEveryRecordOnceAsSent(): Promise<void> {
    const { rows: counts } = await db.query<{ stored: number; keys: number }>(
      `SELECT count(*)::int AS stored, count(DISTINCT (battery_id, ts))::int AS keys FROM telemetry_readings($1, NULL, $2, $3)`,
      [deviceId, new Date(start), new Date(end)],
    );
    expect(counts[0]).toEqual({ stored: records.length, keys: records.length });

    const { rows } = await db.query<Reading>('SELECT battery_id, ts, metrics FROM telemetry_readings($1, NULL, $2, $3) ORDER BY ts, battery_id', [
      deviceId,
      new Date(start),
      new Date(end),
    ]);
    const seen = new Set<string>();
    const differences: string[] = [];
    for (const row of rows) {
      const key = keyOf(row.battery_id, row.ts.getTime());
      const metrics = sent.get(key);
      if (seen.has(key)) differences.push(`${key}: stored twice`);
      else if (!metrics) differences.push(`${key}: stored, never sent`);
      else if (!isDeepStrictEqual(row.metrics, metrics)) differences.push(`${key}: stored ${JSON.stringify(row.metrics)}, sent ${JSON.stringify(metrics)}`);
      seen.add(key);
    }
    for (const key of sent.keys()) if (!seen.has(key)) differences.push(`${key}: sent, not stored`);
    expect(differences.slice(0, 10)).toEqual([]);
    expect(rows).toHaveLength(records.length);
  }

  beforeAll(async () => {
    main = await buildService();
    database = await createTestDatabase();
    // In process, with compaction off, for the set-up only: closed before the service starts, so
    // its job worker cannot take the compaction job the service queues.
    const t = await startTestApp(database.url, { TELEMETRY_MAX_REQUESTS_PER_DEVICE: '1000000' });
    try {
      const owner = await aVerifiedCustomer(t);
      const body = aRegistration();
      const { accessToken } = await registerDevice(t.api, body);
      deviceId = body.deviceId;
      const claimed = await t.api.POST('/api/v1/user/devices/claim', { body: { deviceId, claimCode: body.claimCode }, headers: customerAuth(owner.accessToken) });
      expect(claimed.response.status).toBe(200);
      await ingestAll(t.api, accessToken, records);
    } finally {
      await t.close();
    }
    db = new pg.Pool({ connectionString: database.url, max: 1 });
    // TELEMETRY_COMPACTION_ENABLED unset: on, as in production.
    env = { PORT: String(await freePort()), HOST: '127.0.0.1', DATABASE_URL: database.url, DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  }, 240_000);

  afterAll(async () => {
    await killService(service);
    await endPool(db);
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a kill in the middle leaves each day compacted or still rows, never half, and every record there once', async () => {
    expect((await layout()).map((day) => day.compact)).toEqual(Array(DAYS).fill(0));
    const child = await startChild();

    // The kill falls while a day's statement runs, with a day done before it and one left after
    // it (so even should that statement commit before the kill lands, a day stays rows).
    const compacting = await eventually(async () => {
      const { rows } = await db.query<{ pid: number; days: number }>(
        `SELECT a.pid, (SELECT count(DISTINCT d.day)::int FROM telemetry_days d WHERE d.device_id = $1) AS days
           FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.state = 'active' AND a.query LIKE '%DELETE FROM telemetry_days%'`,
        [deviceId],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0].days).toBeGreaterThanOrEqual(1);
      expect(rows[0].days).toBeLessThanOrEqual(DAYS - 2);
      return rows[0];
    }, 120_000);
    child.child.kill('SIGKILL');
    await child.exited;
    // The killed service's sessions end once PostgreSQL notices: the day's statement runs to its
    // end first, then its transaction rolls back, never to commit.
    await eventually(async () => {
      const { rows } = await db.query<{ sessions: number }>(
        "SELECT count(*)::int AS sessions FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
      );
      expect(rows[0].sessions).toBe(0);
    }, 120_000);

    const days = await layout();
    const compacted = days.filter((day) => day.compact > 0);
    expect(compacted.length).toBeGreaterThanOrEqual(compacting.days);
    expect(compacted.length).toBeLessThan(DAYS);
    // Oldest first: the compacted days, then the rest, each whole.
    expect(days).toEqual(days.map((day, i) => (i < compacted.length ? asCompacted(day.day) : asRows(day.day))));
    await expectEveryRecordOnceAsSent();
  }, 240_000);

  it('the next start compacts the days left: every record once, as sent, one row per battery and day', async () => {
    const child = await startChild();
    await eventually(async () => {
      const { rows } = await db.query<{ left: number }>('SELECT count(*)::int AS left FROM telemetry WHERE device_id = $1 AND ts >= $2 AND ts < $3', [
        deviceId,
        new Date(start),
        new Date(end),
      ]);
      expect(rows[0].left).toBe(0);
    }, 120_000).catch((error: unknown) => {
      // What the service said about it, should it not compact.
      const said = child.output().split('\n').filter((line) => /compact|[Jj]ob|"level":[45]/.test(line));
      process.stdout.write(`compaction after the restart, the service's lines:\n${said.slice(-20).join('\n')}\n`);
      throw error;
    });

    const days = await layout();
    expect(days).toEqual(days.map((day) => asCompacted(day.day)));
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry_days WHERE device_id = $1', [deviceId]);
    expect(rows[0].n).toBe(DAYS * BATTERIES.length);
    await expectEveryRecordOnceAsSent();

    child.child.kill('SIGTERM');
    expect(await child.exited).toBe(0);
  }, 240_000);
});
