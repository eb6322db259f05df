import { DEVICE_LOCK_CLASSES } from '../../../shared/database/advisory-locks.js';

/**
 * Takes the lock a device's compaction and its late records' ingest share (two-key advisory lock:
 * DEVICE_LOCK_CLASSES.telemetry, the device id's hash) for each device of $1, in one order so two
 * holders cannot deadlock: a record of a day being compacted is either moved with it or finds it
 * compacted, never both or neither.
 */
export const LOCK_DEVICES_SQL = `SELECT pg_advisory_xact_lock(${DEVICE_LOCK_CLASSES.telemetry}, k) FROM (SELECT DISTINCT hashtext(id) AS k FROM unnest($1::text[]) AS id ORDER BY 1) AS keys`;

/**
 * Compacts one device's UTC day ($1 device, $2 the day's midnight): its records (rows of
 * `telemetry`), its five-minute rollup rows and what an earlier compaction of the day made are
 * deleted and written back as one row per battery and hour of records (`telemetry_hours`) and one
 * row per battery of five-minute slots (`telemetry_days`); the migrations TelemetryDays and
 * TelemetryHours describe the arrays. One statement, so a crash leaves the day as it was or
 * compacted, never half; run under the device's lock (LOCK_DEVICES_SQL). Answers the records
 * compacted.
 *
 * Values are encoded from their decimal form: a record's numbers as stored (jsonb keeps the
 * gateway's digits), an earlier compact row's through float8's text, the shortest that reads back
 * as the same double, which is how the gateway's JSON wrote it too.
 *
 * Each hour's arrays come from grouping the day's values once by (battery, hour). Subqueries per
 * hour (LATERAL) read the day's values again for every hour — the join to the values built its hash
 * of all of them 24 times — and took ~1.4 × the PostgreSQL CPU for a day of 8,640 records.
 */
export const COMPACT_DAY_SQL = `
WITH moved AS (
  DELETE FROM telemetry WHERE device_id = $1 AND ts >= $2 AND ts < $2 + interval '1 day'
  RETURNING battery_id, ts, metrics
), moved_slots AS (
  DELETE FROM telemetry_rollup_5m WHERE device_id = $1 AND bucket >= $2 AND bucket < $2 + interval '1 day'
  RETURNING battery_id, metric, bucket, count, sum, min, max
), earlier_hours AS (
  DELETE FROM telemetry_hours WHERE device_id = $1 AND hour >= $2 AND hour < $2 + interval '1 day'
  RETURNING battery_id, hour, metrics, divisors, bases, records, slots, offsets, vals
), earlier_day AS (
  DELETE FROM telemetry_days WHERE device_id = $1 AND day = $2
  RETURNING battery_id, metrics, slot_count, slot_sum, slot_min, slot_max
), vals AS (
  SELECT m.battery_id::text AS battery_id, m.ts, v.key AS metric, (v.value)::numeric AS num
    FROM moved m CROSS JOIN LATERAL jsonb_each(m.metrics) AS v
  UNION ALL
  SELECT e.battery_id::text, v.ts, v.metric, v.value::text::numeric
    FROM earlier_hours e CROSS JOIN LATERAL telemetry_hour_values(e.hour, e.metrics, e.divisors, e.bases, e.records, e.slots, e.offsets, e.vals, e.hour, e.hour + interval '1 hour') AS v
), slot_parts AS (
  SELECT battery_id::text AS battery_id, metric::text AS metric, floor(extract(epoch FROM bucket - $2) / 300)::int AS slot, count, sum, min, max FROM moved_slots
  UNION ALL
  SELECT e.battery_id::text, s.metric, floor(extract(epoch FROM s.bucket - $2) / 300)::int, s.count, s.sum, s.min, s.max
    FROM earlier_day e CROSS JOIN LATERAL telemetry_day_slots($2, e.metrics, e.slot_count, e.slot_sum, e.slot_min, e.slot_max, $2, $2 + interval '1 day') AS s
), slot_rows AS (
  SELECT battery_id, metric, slot, sum(count)::int AS count, sum(sum) AS sum, min(min) AS min, max(max) AS max
    FROM slot_parts GROUP BY battery_id, metric, slot
), hour_kinds AS (
  SELECT battery_id, hour, metric, row_number() OVER (PARTITION BY battery_id, hour ORDER BY metric COLLATE "C")::int AS i,
         CASE WHEN places <= 15 AND high * 10::numeric ^ places < 2::numeric ^ 50 THEN 10::numeric ^ places END AS factor, low
    FROM (SELECT battery_id, date_bin('1 hour', ts, $2) AS hour, metric, max(scale(num)) AS places, min(num) AS low, max(abs(num)) AS high
            FROM vals GROUP BY 1, 2, 3) AS names
), placed AS (
  SELECT battery_id, hour, ts, row_number() OVER (PARTITION BY battery_id, hour ORDER BY ts)::int AS k,
         floor(extract(epoch FROM ts - hour) / 300)::int AS slot,
         (floor(extract(epoch FROM ts - hour) * 1000000) - floor(extract(epoch FROM ts - hour) / 300) * 300000000)::int AS us
    FROM (SELECT DISTINCT battery_id, date_bin('1 hour', ts, $2) AS hour, ts FROM vals) AS r
), hour_names AS (
  SELECT battery_id, hour, array_agg(metric ORDER BY i) AS metrics, array_agg(factor::float8 ORDER BY i) AS divisors, array_agg((low * factor)::float8 ORDER BY i) AS bases
    FROM hour_kinds GROUP BY battery_id, hour
), hour_times AS (
  SELECT battery_id, hour, array_agg(slot::int2 ORDER BY k) AS slots, array_agg(us ORDER BY k) AS offsets
    FROM placed GROUP BY battery_id, hour
), hour_counts AS (
  SELECT h.battery_id, h.hour, array_agg(coalesce(n.n, 0) ORDER BY g.slot) AS records
    FROM (SELECT DISTINCT battery_id, hour FROM placed) AS h CROSS JOIN generate_series(0, 11) AS g (slot)
    LEFT JOIN (SELECT battery_id, hour, slot, count(*)::int AS n FROM placed GROUP BY 1, 2, 3) AS n ON n.battery_id = h.battery_id AND n.hour = h.hour AND n.slot = g.slot
   GROUP BY h.battery_id, h.hour
), hour_vals AS (
  SELECT k.battery_id, k.hour, array_agg(CASE WHEN k.factor IS NULL THEN v.num::float8 ELSE ((v.num - k.low) * k.factor)::float8 END ORDER BY k.i, p.k) AS vals
    FROM hour_kinds k JOIN placed p ON p.battery_id = k.battery_id AND p.hour = k.hour
    LEFT JOIN vals v ON v.battery_id = p.battery_id AND v.ts = p.ts AND v.metric = k.metric
   GROUP BY k.battery_id, k.hour
), written_hours AS (
  INSERT INTO telemetry_hours (device_id, hour, battery_id, metrics, divisors, bases, records, slots, offsets, vals)
  SELECT $1, n.hour, n.battery_id, n.metrics, n.divisors, n.bases, c.records, t.slots, t.offsets, coalesce(v.vals, '{}')
    FROM hour_names n
    JOIN hour_times t ON t.battery_id = n.battery_id AND t.hour = n.hour
    JOIN hour_counts c ON c.battery_id = n.battery_id AND c.hour = n.hour
    LEFT JOIN hour_vals v ON v.battery_id = n.battery_id AND v.hour = n.hour
  RETURNING cardinality(offsets) AS n
), day_kinds AS (
  SELECT battery_id, metric, row_number() OVER (PARTITION BY battery_id ORDER BY metric COLLATE "C")::int AS i
    FROM (SELECT DISTINCT battery_id, metric FROM slot_rows) AS names
), written_day AS (
  INSERT INTO telemetry_days (device_id, day, battery_id, metrics, slot_count, slot_sum, slot_min, slot_max)
  SELECT $1, $2, b.battery_id,
         (SELECT array_agg(k.metric ORDER BY k.i) FROM day_kinds k WHERE k.battery_id = b.battery_id), a.count, a.sum, a.min, a.max
    FROM (SELECT DISTINCT battery_id FROM day_kinds) AS b
   CROSS JOIN LATERAL (
     SELECT array_agg(coalesce(s.count, 0) ORDER BY k.i, g.slot) AS count, array_agg(s.sum ORDER BY k.i, g.slot) AS sum,
            array_agg(s.min ORDER BY k.i, g.slot) AS min, array_agg(s.max ORDER BY k.i, g.slot) AS max
       FROM day_kinds k CROSS JOIN generate_series(0, 287) AS g (slot)
       LEFT JOIN slot_rows s ON s.battery_id = k.battery_id AND s.metric = k.metric AND s.slot = g.slot
      WHERE k.battery_id = b.battery_id
   ) AS a
)
SELECT coalesce(sum(n), 0)::int AS records FROM written_hours`;
