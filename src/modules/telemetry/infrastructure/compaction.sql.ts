/**
 * The lock a device's compaction and its late records' ingest share (two-key advisory lock: this
 * class, the device id's hash), so a record of a day being compacted is either moved with it or
 * finds it compacted, never both or neither. Arbitrary constant.
 */
export const DEVICE_LOCK_CLASS = 7_221_950;

/** Takes the lock of each device of $1, in one order so two holders cannot deadlock. */
export const LOCK_DEVICES_SQL = `SELECT pg_advisory_xact_lock(${DEVICE_LOCK_CLASS}, k) FROM (SELECT DISTINCT hashtext(id) AS k FROM unnest($1::text[]) AS id ORDER BY 1) AS keys`;

/**
 * Compacts one device's UTC day ($1 device, $2 the day's midnight): its records (rows of
 * `telemetry`), its five-minute rollup rows and the day's compact rows of an earlier compaction
 * are deleted and written back as one compact row per battery (the migration TelemetryDays
 * describes the arrays). One statement, so a crash leaves the day as it was or compacted, never
 * half; run under the device's lock (DEVICE_LOCK_CLASS). Answers the records compacted.
 *
 * Values are encoded from their decimal form: a record's numbers as stored (jsonb keeps the
 * gateway's digits), an earlier compact row's through float8's text, the shortest that reads back
 * as the same double, which is how the gateway's JSON wrote it too.
 */
export const COMPACT_DAY_SQL = `
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
