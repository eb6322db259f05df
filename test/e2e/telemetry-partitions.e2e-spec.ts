import { SchedulerRegistry } from '@nestjs/schedule';
import type pg from 'pg';
import { ADVISORY_LOCKS } from '../../src/shared/database/advisory-locks.js';
import { TelemetryPartitionStore } from '../../src/modules/telemetry/domain/telemetry-partition.store.js';
import { aRegistration, registerDevice, type Registered } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth } from '../support/customers.js';
import { DAY, HOUR, expectSeries, expectedSeries, history, ingestAll, iso, ROLLUP_LEVELS, rollupRows, telemetryRows, type TelemetryRecordBody } from '../support/telemetry.js';

const RETENTION_DAYS = 365;

function monthStart(ms: number): Date {
  const date = new Date(ms);
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));
}

function addMonths(month: Date, count: number): Date {
  return new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + count, 1));
}

function nameOf(month: Date): string {
  return `telemetry_y${month.getUTCFullYear()}m${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The partition names of every month from the one holding the cut-off to two months after the one holding `at`. */
function expectedMonths(at: number, retentionDays: number): string[] {
  const names: string[] = [];
  for (let month = monthStart(at - retentionDays * DAY); month <= addMonths(monthStart(at), 2); month = addMonths(month, 1)) names.push(nameOf(month));
  return names;
}

/** The first instant after the partition's month. */
function upperOf(name: string): number {
  const [, year, month] = /^telemetry_y(\d{4})m(\d{2})$/.exec(name)!;
  return Date.UTC(Number(year), Number(month), 1);
}

async function partitions(db: pg.Pool): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'telemetry'::regclass ORDER BY c.relname`,
  );
  return rows.map((row) => row.name);
}

describe('telemetry partitions and retention', () => {
  let t: TestApp;
  let maintenance: TelemetryPartitionStore;
  /** Captured once around the start; the app maintained its partitions at some instant in between. */
  const startedAfter = Date.now();
  let startedBefore: number;

  beforeAll(async () => {
    t = await createTestApp({ TELEMETRY_RETENTION_DAYS: String(RETENTION_DAYS) });
    startedBefore = Date.now();
    maintenance = t.app.get(TelemetryPartitionStore);
  });
  afterAll(async () => {
    await t.close();
  });

  it('after start, one partition per month from the retention cut-off to two months ahead, named telemetry_yYYYYmMM', async () => {
    const names = await partitions(t.db);

    expect([expectedMonths(startedAfter, RETENTION_DAYS), expectedMonths(startedBefore, RETENTION_DAYS)]).toContainEqual(names);
    expect(names.length).toBeGreaterThanOrEqual(15);
  });

  it('each partition holds exactly its UTC month', async () => {
    const { rows } = await t.db.query<{ name: string; lower: Date; upper: Date }>(
      `SELECT c.relname AS name, b.m[1]::timestamptz AS lower, b.m[2]::timestamptz AS upper
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         CROSS JOIN LATERAL (SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS m) AS b
        WHERE i.inhparent = 'telemetry'::regclass`,
    );

    expect(rows.length).toBeGreaterThan(0);
    for (const { name, lower, upper } of rows) {
      expect({ name, lower: lower.getTime(), upper: upper.getTime() }).toEqual({ name, lower: addMonths(new Date(upperOf(name)), -1).getTime(), upper: upperOf(name) });
    }
  });

  it('a second maintain with the same clock creates and drops nothing', async () => {
    const before = await partitions(t.db);

    expect(await maintenance.maintain(new Date(startedBefore), RETENTION_DAYS)).toEqual({ created: [], dropped: [] });
    expect(await partitions(t.db)).toEqual(before);
  });

  describe('retention: maintain(now + 400 days, 365)', () => {
    const now = startedAfter;
    const later = new Date(now + 400 * DAY);
    const cutoff = later.getTime() - RETENTION_DAYS * DAY;
    let device: Registered;
    let before: string[];
    let result: { created: string[]; dropped: string[] };
    /**
     * In the partition two months ahead, which ends after the cut-off whatever the date (the cut-off
     * is 35 days ahead), and itself after the cut-off. Written directly: no gateway may send a future reading.
     */
    const survivorTs = addMonths(monthStart(now), 2).getTime() + 20 * DAY;

    beforeAll(async () => {
      device = await registerDevice(t.api);
      await ingestAll(t.api, device.accessToken, [
        { ts: iso(now - 200 * DAY), metrics: { voltage: 1 } },
        { ts: iso(now - 40 * DAY), metrics: { voltage: 2 } },
        { ts: iso(now - DAY), metrics: { voltage: 3 } },
      ]);
      await t.db.query(`INSERT INTO telemetry (device_id, battery_id, ts, metrics) VALUES ($1, 'main', $2, '{"voltage": 4}')`, [device.deviceId, new Date(survivorTs)]);
      for (const { table } of Object.values(ROLLUP_LEVELS)) {
        await t.db.query(`INSERT INTO ${table} (device_id, battery_id, metric, bucket, count, sum, min, max) VALUES ($1, 'main', 'voltage', $2, 1, 4, 4, 4)`, [
          device.deviceId,
          new Date(survivorTs),
        ]);
      }
      // The background recomputation would take the planted marks (and drop the planted hours, which have no records): off here.
      t.app.get(SchedulerRegistry).deleteInterval('battery-energy');
      for (const [table, columns, values] of [
        ['battery_energy_1h', 'charged_ah, discharged_ah, charged_wh, discharged_wh, covered_ms', ', 1, 1, 1, 1, 1'],
        ['battery_energy_stale', '', ''],
      ]) {
        for (const bucket of [new Date(monthStart(now - 200 * DAY)), new Date(survivorTs)]) {
          await t.db.query(`INSERT INTO ${table} (device_id, battery_id, bucket${columns ? `, ${columns}` : ''}) VALUES ($1, 'main', $2${values})`, [device.deviceId, bucket]);
        }
      }
      before = await partitions(t.db);
      expect(before).toContain(nameOf(monthStart(survivorTs)));
      for (const rows of Object.values(await rollupRows(t.db, device.deviceId))) expect(rows).toHaveLength(4);

      result = await maintenance.maintain(later, RETENTION_DAYS);
    });

    it('drops every partition wholly older than the cut-off, and only those', async () => {
      const expectedDropped = before.filter((name) => upperOf(name) <= cutoff);

      expect(expectedDropped.length).toBeGreaterThanOrEqual(12);
      expect([...result.dropped].sort()).toEqual(expectedDropped);
      const remaining = await partitions(t.db);
      for (const name of expectedDropped) expect(remaining).not.toContain(name);
      for (const name of before.filter((candidate) => upperOf(candidate) > cutoff)) expect(remaining).toContain(name);
    });

    it('the rows of dropped partitions are gone, the newer row remains', async () => {
      expect((await telemetryRows(t.db, device.deviceId)).map((row) => ({ ts: row.ts.getTime(), metrics: row.metrics }))).toEqual([
        { ts: survivorTs, metrics: { voltage: 4 } },
      ]);
    });

    it('creates the months up to two months after the new clock: the whole set runs from the cut-off month on', async () => {
      const expectedCreated = expectedMonths(later.getTime(), RETENTION_DAYS).filter((name) => !before.includes(name));

      expect(expectedCreated.length).toBeGreaterThan(0);
      expect([...result.created].sort()).toEqual(expectedCreated);
      expect(await partitions(t.db)).toEqual(expectedMonths(later.getTime(), RETENTION_DAYS));
    });

    it('deletes the rollup rows of the dropped months at every level (5 min, 1 h, 6 h, 1 day), keeps the newer', async () => {
      const levels = await rollupRows(t.db, device.deviceId);
      expect(Object.keys(levels)).toEqual(['5m', '1h', '6h', '1d']);
      for (const rows of Object.values(levels)) expect(rows.map((row) => row.bucket.getTime())).toEqual([survivorTs]);
      for (const { table } of Object.values(ROLLUP_LEVELS)) {
        const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE bucket < $1`, [monthStart(cutoff)]);
        expect(rows[0].n).toBe(0);
      }
    });

    it("deletes the batteries' energy hours and marks of the dropped months, keeps the newer", async () => {
      for (const table of ['battery_energy_1h', 'battery_energy_stale']) {
        const { rows } = await t.db.query<{ bucket: Date }>(`SELECT bucket FROM ${table} WHERE device_id = $1`, [device.deviceId]);
        expect({ table, buckets: rows.map((row) => row.bucket.getTime()) }).toEqual({ table, buckets: [survivorTs] });
      }
    });

    it('two concurrent maintain calls both succeed; together they create each missing month once', async () => {
      const evenLater = new Date(later.getTime() + 100 * DAY);
      const existing = await partitions(t.db);

      const results = await Promise.all([maintenance.maintain(evenLater, RETENTION_DAYS), maintenance.maintain(evenLater, RETENTION_DAYS)]);

      const created = results.flatMap((outcome) => outcome.created).sort();
      const dropped = results.flatMap((outcome) => outcome.dropped).sort();
      const expected = expectedMonths(evenLater.getTime(), RETENTION_DAYS);
      expect(created).toEqual(expected.filter((name) => !existing.includes(name)));
      expect(dropped).toEqual(existing.filter((name) => upperOf(name) <= evenLater.getTime() - RETENTION_DAYS * DAY));
      expect(await partitions(t.db)).toEqual(expected);
    });

    it('while another session holds the maintenance lock, maintain changes nothing and does not fail', async () => {
      const evenLater = new Date(later.getTime() + 200 * DAY);
      const existing = await partitions(t.db);
      const holder = await t.db.connect();
      try {
        await holder.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCKS.telemetryPartitions]);

        expect(await maintenance.maintain(evenLater, RETENTION_DAYS)).toEqual({ created: [], dropped: [] });
        expect(await partitions(t.db)).toEqual(existing);
      } finally {
        await holder.query('SELECT pg_advisory_unlock($1)', [ADVISORY_LOCKS.telemetryPartitions]);
        holder.release();
      }
      expect((await maintenance.maintain(evenLater, RETENTION_DAYS)).created.length).toBeGreaterThan(0);
    });
  });

  describe('what retention keeps stays consistent: aggregated history equals the raw records it still returns', () => {
    let t2: TestApp;
    const now = Date.now();
    /** A 5-minute slot 200 days ago; the retention cut-off is put 130 s into it. */
    const slot = Math.floor((now - 200 * DAY) / 300_000) * 300_000;
    const records: TelemetryRecordBody[] = [10, 70, 130, 190, 250, 310, 370].map((second, i) => ({ ts: iso(slot + second * 1000), metrics: { voltage: 50 + i } }));
    let deviceId: string;
    let headers: { authorization: string };

    beforeAll(async () => {
      t2 = await createTestApp({ TELEMETRY_RETENTION_DAYS: String(RETENTION_DAYS) });
      const owner = await aVerifiedCustomer(t2);
      headers = customerAuth(owner.accessToken);
      const body = aRegistration();
      const registered = await registerDevice(t2.api, body);
      deviceId = body.deviceId;
      expect((await t2.api.POST('/api/v1/user/devices/claim', { body: { deviceId, claimCode: body.claimCode }, headers })).response.status).toBe(200);
      await ingestAll(t2.api, registered.accessToken, records);

      await t2.app.get(TelemetryPartitionStore).maintain(new Date(slot + 130_000 + RETENTION_DAYS * DAY), RETENTION_DAYS);
    });
    afterAll(async () => {
      await t2.close();
    });

    it('the raw records of the month holding the cut-off are still answered', async () => {
      const { data } = await history(t2.api, headers, deviceId, { from: iso(slot - HOUR), to: iso(slot + HOUR), bucket: 'raw' });

      expect(data!.records!.map((record) => record.ts)).toEqual(records.map((record) => record.ts));
    });

    it.each([300, 3600, 60])('bucket=%d aggregates exactly those records', async (bucketSec) => {
      const raw = (await history(t2.api, headers, deviceId, { from: iso(slot - HOUR), to: iso(slot + HOUR), bucket: 'raw' })).data!.records!;

      const { data } = await history(t2.api, headers, deviceId, { from: iso(slot - HOUR), to: iso(slot + HOUR), bucket: String(bucketSec) });

      expectSeries(data!.series, expectedSeries(raw, { from: slot - HOUR, to: slot + HOUR, bucketSec }));
    });
  });
});
