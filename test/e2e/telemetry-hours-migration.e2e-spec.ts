import pg from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions, MIGRATIONS } from '../../src/shared/database/data-source-options.js';
import { TelemetryHours1764002800000 } from '../../src/shared/database/migrations/1764002800000-telemetry-hours.js';
import { runMigrations } from '../../src/shared/database/migrate.js';
import { createTestDatabase, endPool } from '../support/postgres.js';

/**
 * The statement with which the TelemetryDays layout compacted a day (one row per battery and day
 * holding records and slots), as it was then: what databases compacted before TelemetryHours hold.
 */
const EARLIER_COMPACT_DAY_SQL = `
WITH moved AS (
  DELETE FROM telemetry WHERE device_id = $1 AND ts >= $2 AND ts < $2 + interval '1 day'
  RETURNING battery_id, ts, metrics
), moved_slots AS (
  DELETE FROM telemetry_rollup_5m WHERE device_id = $1 AND bucket >= $2 AND bucket < $2 + interval '1 day'
  RETURNING battery_id, metric, bucket, count, sum, min, max
), earlier AS (
  DELETE FROM telemetry_days WHERE device_id = $1 AND day = $2
  RETURNING battery_id, metrics, divisors, bases, records, slots, offsets, vals, slot_count, slot_sum, slot_min, slot_max
), vals AS (
  SELECT m.battery_id::text AS battery_id, m.ts, v.key AS metric, (v.value)::numeric AS num
    FROM moved m CROSS JOIN LATERAL jsonb_each(m.metrics) AS v
  UNION ALL
  SELECT e.battery_id::text, v.ts, v.metric, v.value::text::numeric
    FROM earlier e CROSS JOIN LATERAL telemetry_day_values($2, e.metrics, e.divisors, e.bases, e.records, e.slots, e.offsets, e.vals, $2, $2 + interval '1 day') AS v
), slot_parts AS (
  SELECT battery_id::text AS battery_id, metric::text AS metric, floor(extract(epoch FROM bucket - $2) / 300)::int AS slot, count, sum, min, max FROM moved_slots
  UNION ALL
  SELECT e.battery_id::text, s.metric, floor(extract(epoch FROM s.bucket - $2) / 300)::int, s.count, s.sum, s.min, s.max
    FROM earlier e CROSS JOIN LATERAL telemetry_day_slots($2, e.metrics, e.slot_count, e.slot_sum, e.slot_min, e.slot_max, $2, $2 + interval '1 day') AS s
), slot_rows AS (
  SELECT battery_id, metric, slot, sum(count)::int AS count, sum(sum) AS sum, min(min) AS min, max(max) AS max
    FROM slot_parts GROUP BY battery_id, metric, slot
), names AS (
  SELECT battery_id, metric, max(scale(num)) AS places, min(num) AS low, max(abs(num)) AS high
    FROM vals GROUP BY battery_id, metric
  UNION
  SELECT DISTINCT battery_id, metric, NULL::int, NULL::numeric, NULL::numeric FROM slot_rows s
   WHERE NOT EXISTS (SELECT 1 FROM vals v WHERE v.battery_id = s.battery_id AND v.metric = s.metric)
), kinds AS (
  SELECT battery_id, metric, row_number() OVER (PARTITION BY battery_id ORDER BY metric COLLATE "C")::int AS i,
         CASE WHEN places <= 15 AND high * 10::numeric ^ places < 2::numeric ^ 50 THEN 10::numeric ^ places END AS factor, low
    FROM names
), placed AS (
  SELECT battery_id, ts, row_number() OVER (PARTITION BY battery_id ORDER BY ts)::int AS k,
         floor(extract(epoch FROM ts - $2) / 300)::int AS slot,
         (floor(extract(epoch FROM ts - $2) * 1000000) - floor(extract(epoch FROM ts - $2) / 300) * 300000000)::int AS us
    FROM (SELECT DISTINCT battery_id, ts FROM vals) AS r
), batteries AS (
  SELECT DISTINCT battery_id FROM kinds
), written AS (
  INSERT INTO telemetry_days (device_id, day, battery_id, metrics, divisors, bases, records, slots, offsets, vals, slot_count, slot_sum, slot_min, slot_max)
  SELECT $1, $2, b.battery_id,
    (SELECT array_agg(k.metric ORDER BY k.i) FROM kinds k WHERE k.battery_id = b.battery_id),
    (SELECT array_agg(k.factor::float8 ORDER BY k.i) FROM kinds k WHERE k.battery_id = b.battery_id),
    (SELECT array_agg((k.low * k.factor)::float8 ORDER BY k.i) FROM kinds k WHERE k.battery_id = b.battery_id),
    (SELECT array_agg(coalesce(c.n, 0) ORDER BY g.slot) FROM generate_series(0, 287) AS g (slot)
       LEFT JOIN (SELECT p.slot, count(*)::int AS n FROM placed p WHERE p.battery_id = b.battery_id GROUP BY p.slot) AS c ON c.slot = g.slot),
    coalesce((SELECT array_agg(p.slot::int2 ORDER BY p.k) FROM placed p WHERE p.battery_id = b.battery_id), '{}'),
    coalesce((SELECT array_agg(p.us ORDER BY p.k) FROM placed p WHERE p.battery_id = b.battery_id), '{}'),
    coalesce((SELECT array_agg(CASE WHEN k.factor IS NULL THEN v.num::float8 ELSE ((v.num - k.low) * k.factor)::float8 END ORDER BY k.i, p.k)
       FROM kinds k JOIN placed p ON p.battery_id = k.battery_id
       LEFT JOIN vals v ON v.battery_id = p.battery_id AND v.ts = p.ts AND v.metric = k.metric
      WHERE k.battery_id = b.battery_id), '{}'),
    (SELECT array_agg(coalesce(s.count, 0) ORDER BY k.i, g.slot) FROM kinds k CROSS JOIN generate_series(0, 287) AS g (slot)
       LEFT JOIN slot_rows s ON s.battery_id = k.battery_id AND s.metric = k.metric AND s.slot = g.slot WHERE k.battery_id = b.battery_id),
    (SELECT array_agg(s.sum ORDER BY k.i, g.slot) FROM kinds k CROSS JOIN generate_series(0, 287) AS g (slot)
       LEFT JOIN slot_rows s ON s.battery_id = k.battery_id AND s.metric = k.metric AND s.slot = g.slot WHERE k.battery_id = b.battery_id),
    (SELECT array_agg(s.min ORDER BY k.i, g.slot) FROM kinds k CROSS JOIN generate_series(0, 287) AS g (slot)
       LEFT JOIN slot_rows s ON s.battery_id = k.battery_id AND s.metric = k.metric AND s.slot = g.slot WHERE k.battery_id = b.battery_id),
    (SELECT array_agg(s.max ORDER BY k.i, g.slot) FROM kinds k CROSS JOIN generate_series(0, 287) AS g (slot)
       LEFT JOIN slot_rows s ON s.battery_id = k.battery_id AND s.metric = k.metric AND s.slot = g.slot WHERE k.battery_id = b.battery_id)
  FROM batteries b
  RETURNING cardinality(offsets) AS n
)
SELECT coalesce(sum(n), 0)::int AS records FROM written`;


const DEVICE = 'gw-hours-1';
const DAY = 86_400_000;
const FIRST_DAY = Date.UTC(2026, 9, 5);
const DAYS = [FIRST_DAY, FIRST_DAY + DAY];

/**
 * Two days of two batteries: a record every 37 s and a few at the edges of hours (the first and
 * last microsecond), values of several decimal places, integers, doubles that stay doubles, a
 * metric missing from some records, and an hour with no records of one battery.
 */
function sentRecords(): Array<{ batteryId: string; ts: string; metrics: Record<string, number> }> {
  const records: Array<{ batteryId: string; ts: string; metrics: Record<string, number> }> = [];
  for (const batteryId of ['main', 'pack-2']) {
    for (const day of DAYS) {
      const times = new Set<number>();
      for (let ms = 0; ms < DAY; ms += 37_000) times.add(day + ms);
      for (let hour = 0; hour < 24; hour++) {
        times.add(day + hour * 3_600_000);
        times.add(day + (hour + 1) * 3_600_000 - 1);
      }
      for (const at of [...times].sort((a, b) => a - b)) {
        const hour = Math.floor((at - day) / 3_600_000);
        if (batteryId === 'pack-2' && hour === 13) continue;
        const i = at / 37_000;
        const metrics: Record<string, number> = { voltage: Math.round(5200 + 40 * Math.sin(i)) / 100, soc: Math.round(50 + 40 * Math.cos(i / 50)) };
        if (Math.floor(i) % 3 === 0) metrics.current = Math.round(-1200 + 2400 * Math.sin(i / 7)) / 1000;
        if (Math.floor(i) % 5 === 0) metrics.drift = Math.sin(i) / 3;
        records.push({ batteryId, ts: new Date(at).toISOString(), metrics });
      }
    }
  }
  return records;
}

/**
 * A database compacted in the layout of TelemetryDays (records in one row per battery and day)
 * when TelemetryHours arrives: the migration cuts each day's records into hour rows, and every
 * record reads back as before, through the same function (telemetry_readings), as does each
 * five-minute slot. Its down returns the records to rows, readable the same.
 */
describe('migration TelemetryHours: compact days are cut into hours, every record and slot as before', () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: pg.Pool;
  const sent = sentRecords();
  const from = new Date(FIRST_DAY);
  const to = new Date(FIRST_DAY + DAYS.length * DAY);
  let readingsBefore: unknown[];
  let slotsBefore: unknown[];

  const readings = async () =>
    (await db.query('SELECT battery_id, ts, metrics FROM telemetry_readings($1, NULL, $2, $3) ORDER BY battery_id, ts', [DEVICE, from, to])).rows;
  const slots = async () =>
    (
      await db.query(
        `SELECT d.battery_id, s.metric, s.bucket, s.count, s.sum, s.min, s.max
           FROM telemetry_days d CROSS JOIN LATERAL telemetry_day_slots(d.day, d.metrics, d.slot_count, d.slot_sum, d.slot_min, d.slot_max, d.day, d.day + interval '1 day') AS s
          WHERE d.device_id = $1 ORDER BY d.battery_id, s.metric, s.bucket`,
        [DEVICE],
      )
    ).rows;
  const rollupRows = async () =>
    (await db.query('SELECT battery_id, metric, bucket, count, sum, min, max FROM telemetry_rollup_5m WHERE device_id = $1 ORDER BY battery_id, metric, bucket', [DEVICE])).rows;

  let rollupBefore: unknown[];

  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
    const before = new DataSource({ ...dataSourceOptions({ url: database.url, poolSize: 1 }), migrations: MIGRATIONS.slice(0, MIGRATIONS.indexOf(TelemetryHours1764002800000)) });
    await before.initialize();
    await before.runMigrations();
    await before.destroy();
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    await db.query("CREATE TABLE telemetry_test_2026 PARTITION OF telemetry FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')");
    await db.query('INSERT INTO telemetry (device_id, battery_id, ts, metrics) SELECT $1, r.battery_id, r.ts, r.metrics FROM unnest($2::text[], $3::timestamptz[], $4::jsonb[]) AS r (battery_id, ts, metrics)', [
      DEVICE,
      sent.map((record) => record.batteryId),
      sent.map((record) => record.ts),
      sent.map((record) => JSON.stringify(record.metrics)),
    ]);
    // The five-minute rollup as ingest writes it: one row per slot, battery and metric.
    await db.query(
      `INSERT INTO telemetry_rollup_5m (device_id, battery_id, metric, bucket, count, sum, min, max)
       SELECT t.device_id, t.battery_id, m.key, date_bin('5 minutes', t.ts, TIMESTAMPTZ '1970-01-01 00:00:00+00'), count(*), sum(m.value::float8), min(m.value::float8), max(m.value::float8)
         FROM telemetry t CROSS JOIN LATERAL jsonb_each_text(t.metrics) AS m (key, value)
        GROUP BY 1, 2, 3, 4`,
    );
    rollupBefore = await rollupRows();
    // As the compaction ran it then: without nested loops (its plan otherwise joins the records quadratically).
    const client = await db.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_nestloop = off');
      for (const day of DAYS) await client.query(EARLIER_COMPACT_DAY_SQL, [DEVICE, new Date(day)]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    readingsBefore = await readings();
    slotsBefore = await slots();

    expect(await runMigrations(database.url)).toEqual(['TelemetryHours1764002800000']);
  });
  afterAll(async () => {
    await endPool(db);
    await database.drop();
  });

  it('the earlier layout held every record once (the setting the migration starts from)', async () => {
    expect(readingsBefore).toHaveLength(sent.length);
    expect(slotsBefore).toHaveLength(rollupBefore.length);
  });

  it('every record reads back as before, now from one row per battery and hour that has records', async () => {
    expect(await readings()).toEqual(readingsBefore);
    const { rows } = await db.query<{ battery_id: string; hours: number; records: number }>(
      'SELECT battery_id, count(*)::int AS hours, sum(cardinality(offsets))::int AS records FROM telemetry_hours WHERE device_id = $1 GROUP BY battery_id ORDER BY battery_id',
      [DEVICE],
    );
    const count = (batteryId: string) => sent.filter((record) => record.batteryId === batteryId).length;
    expect(rows).toEqual([
      { battery_id: 'main', hours: 48, records: count('main') },
      { battery_id: 'pack-2', hours: 46, records: count('pack-2') },
    ]);
    const { rows: left } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = $1', [DEVICE]);
    expect(left[0].n).toBe(0);
  });

  it('a few minutes across an hour boundary read the same records as the rows held', async () => {
    const lo = new Date(FIRST_DAY + DAY + 13 * 3_600_000 - 150_000);
    const hi = new Date(FIRST_DAY + DAY + 14 * 3_600_000 + 1);
    const { rows } = await db.query('SELECT battery_id, ts, metrics FROM telemetry_readings($1, NULL, $2, $3) ORDER BY battery_id, ts', [DEVICE, lo, hi]);
    const expected = sent
      .filter((record) => Date.parse(record.ts) >= lo.getTime() && Date.parse(record.ts) < hi.getTime())
      .map((record) => ({ battery_id: record.batteryId, ts: new Date(record.ts), metrics: record.metrics }))
      .sort((a, b) => a.battery_id.localeCompare(b.battery_id) || a.ts.getTime() - b.ts.getTime());
    expect(rows).toEqual(expected);
  });

  it('the days keep their five-minute slots, and no longer their records', async () => {
    expect(await slots()).toEqual(slotsBefore);
    const { rows } = await db.query<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'telemetry_days' ORDER BY ordinal_position",
    );
    expect(rows.map((row) => row.column_name)).toEqual(['device_id', 'day', 'battery_id', 'metrics', 'slot_count', 'slot_sum', 'slot_min', 'slot_max']);
  });

  it('down returns the records and slots to rows, read the same; up again leaves them rows', async () => {
    const dataSource = new DataSource({ ...dataSourceOptions({ url: database.url, poolSize: 1, statementTimeoutMs: 0 }), migrations: MIGRATIONS });
    await dataSource.initialize();
    try {
      await dataSource.undoLastMigration();
    } finally {
      await dataSource.destroy();
    }
    expect(await readings()).toEqual(readingsBefore);
    expect(await rollupRows()).toEqual(rollupBefore);
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry_days');
    expect(rows[0].n).toBe(0);

    expect(await runMigrations(database.url)).toEqual(['TelemetryHours1764002800000']);
    expect(await readings()).toEqual(readingsBefore);
    const { rows: hours } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry_hours');
    expect(hours[0].n).toBe(0);
  });
});
