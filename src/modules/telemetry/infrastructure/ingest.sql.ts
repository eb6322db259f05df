import { ROLLUP_LEVELS } from '../domain/rollup-levels.js';
import { CHARGE_METRICS } from '../../../shared/kernel/charge-metrics.js';
import { COMPACT_HOURS, readings } from './compact-days.sql.js';
import { EPOCH, rollupInterval, rollupTable } from './rollup-levels.sql.js';

/** Adds the batch's sums per finest slot into one rollup level, taking row locks in key order. */
function addToRollup(table: string, width: string): string {
  return `INSERT INTO ${table} AS r (device_id, battery_id, metric, bucket, count, sum, min, max)
  SELECT device_id, battery_id, metric, date_bin('${width}', bucket, ${EPOCH}) AS slot, sum(count), sum(sum), min(min), max(max)
  FROM slots GROUP BY device_id, battery_id, metric, slot ORDER BY device_id, slot, battery_id, metric
  ON CONFLICT (device_id, bucket, battery_id, metric) DO UPDATE
    SET count = r.count + EXCLUDED.count, sum = r.sum + EXCLUDED.sum,
        min = LEAST(r.min, EXCLUDED.min), max = GREATEST(r.max, EXCLUDED.max)`;
}

/** Each rollup level's CTE of the ingest statement, finest first. */
const ADD_TO_ROLLUPS = ROLLUP_LEVELS.map((level) => `), rollup_${level.name} AS (\n  ${addToRollup(rollupTable(level), rollupInterval(level))}\n`).join('');

/**
 * The records that carry charge (CHARGE_METRICS, shared kernel), handed to the batteries module's
 * function that marks the hours whose energy they change; none, no call.
 */
const ENERGY_STALE = `), energy_stale AS (
  SELECT battery_energy_mark_stale(array_agg(device_id), array_agg(battery_id), array_agg(ts)) AS marked
  FROM inserted WHERE metrics ?| ARRAY[${CHARGE_METRICS.map((metric) => `'${metric}'`).join(', ')}]
  HAVING count(*) > 0
`;

/**
 * The ingest statement for records of any number of devices: unnest into the partitioned table
 * (first stored value wins on (device, ts, battery)), and only the rows actually inserted feed
 * the rollups (slots of the finest level, summed again into each coarser one), the latest value
 * per metric, the battery energy marks and lastSeenAt. Locks are taken in a fixed order (ORDER BY)
 * so concurrent writers queue instead of deadlocking.
 * Hand-written SQL, one statement per flush: the ingest hot path measured by S1 and S2 (bench/README.md).
 *
 * Other modules' tables are reached through the functions their owners export, named here as
 * written (those modules depend on this one, so it imports nothing of theirs): `seen` is the
 * devices module's devices_seen (lastSeenAt and last_telemetry_at, the device rows locked in
 * device order), which answers each device's owner and offline_since; `energy_stale` the batteries
 * module's marks, in this statement so a mark commits with its records or not at all. A CTE that
 * only selects runs only when read, so the last arm of the answer reads `energy_stale` (and
 * answers nothing).
 *
 * The answer: a row per inserted record, and one per device still marked offline (battery_id
 * NULL, offline_since set), which the writer hands to the devices module once this committed.
 * `previous` answers, per battery, the newest record time stored before this statement
 * (device_latest_metrics), which tells the stored-telemetry listeners which records came late
 * (TelemetryFeed).
 */
function ingestSql(batteryAnalytics: boolean, late: boolean): string {
  return `
WITH ${late ? LATE_INPUT : 'input AS (\n  SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::jsonb[]) AS r (device_id, battery_id, ts, metrics)'}
), inserted AS (
  INSERT INTO telemetry (device_id, battery_id, ts, metrics)
  SELECT device_id, battery_id, ts, metrics FROM input
  ON CONFLICT DO NOTHING
  RETURNING device_id, battery_id, ts, metrics
${batteryAnalytics ? ENERGY_STALE : ''}), metric_values AS (
  SELECT i.device_id, i.battery_id, m.key AS metric, i.ts, m.value::float8 AS value
  FROM inserted i CROSS JOIN LATERAL jsonb_each_text(i.metrics) AS m (key, value)
), slots AS (
  SELECT device_id, battery_id, metric, date_bin('${rollupInterval(ROLLUP_LEVELS[0])}', ts, ${EPOCH}) AS bucket,
         count(*) AS count, sum(value) AS sum, min(value) AS min, max(value) AS max
  FROM metric_values GROUP BY device_id, battery_id, metric, bucket
${ADD_TO_ROLLUPS}), latest AS (
  INSERT INTO device_latest_metrics AS l (device_id, battery_id, metric, ts, value)
  SELECT DISTINCT ON (device_id, battery_id, metric) device_id, battery_id, metric, ts, value
  FROM metric_values ORDER BY device_id, battery_id, metric, ts DESC
  ON CONFLICT (device_id, battery_id, metric) DO UPDATE SET ts = EXCLUDED.ts, value = EXCLUDED.value WHERE EXCLUDED.ts > l.ts
), previous AS (
  SELECT l.device_id, l.battery_id, max(l.ts) AS ts FROM device_latest_metrics l
  WHERE (l.device_id, l.battery_id) IN (SELECT DISTINCT device_id, battery_id FROM inserted)
  GROUP BY l.device_id, l.battery_id
), seen AS (
  SELECT device_id, owner_id, offline_since FROM devices_seen($1::text[], $5)
)
SELECT i.device_id, i.battery_id, i.ts, s.owner_id, p.ts AS previous_newest_ts, NULL::timestamptz AS offline_since
  FROM inserted i JOIN seen s ON s.device_id = i.device_id LEFT JOIN previous p ON p.device_id = i.device_id AND p.battery_id = i.battery_id
UNION ALL
SELECT device_id, NULL, NULL, owner_id, NULL, offline_since FROM seen WHERE offline_since IS NOT NULL${
    batteryAnalytics
      ? `
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL FROM energy_stale WHERE marked < 0`
      : ''
  }`;
}

/**
 * The input of a flush with records older than the settled window: those of a compact day (a day
 * compacted already, telemetry_hours) are stored already, so they are left out as the primary key
 * leaves out the rows' duplicates. Only the timestamps of the hours the flush touches are unpacked.
 * Run under the devices' compaction lock (compaction.sql.ts), so a day is not compacted meanwhile.
 */
const LATE_INPUT = `given AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::jsonb[]) AS r (device_id, battery_id, ts, metrics)
), compacted AS (
  SELECT h.device_id, h.battery_id, h.hour + make_interval(secs => u.slot * 300) + u.us * interval '1 microsecond' AS ts
    FROM ${COMPACT_HOURS} h CROSS JOIN LATERAL unnest(h.slots, h.offsets) AS u (slot, us)
   WHERE (h.device_id, h.hour, h.battery_id) IN (SELECT DISTINCT device_id, date_bin('1 hour', ts, ${EPOCH}), battery_id FROM given)
), input AS (
  SELECT g.* FROM given g
   WHERE NOT EXISTS (SELECT 1 FROM compacted c WHERE c.device_id = g.device_id AND c.battery_id = g.battery_id AND c.ts = g.ts)`;

export const INGEST_SQL = ingestSql(true, false);
/** The ingest statement with BATTERY_ANALYTICS_ENABLED=false: no energy marks. */
export const INGEST_SQL_WITHOUT_BATTERY_ANALYTICS = ingestSql(false, false);
/** The ingest statements for flushes with records older than the settled window (LATE_INPUT). */
export const LATE_INGEST_SQL = ingestSql(true, true);
export const LATE_INGEST_SQL_WITHOUT_BATTERY_ANALYTICS = ingestSql(false, true);

/**
 * Of records that were not inserted, those stored with other metrics: the 1-based ordinals of the
 * arrays ($1 device ids, $2 battery ids, $3 times, $4 metrics), as rows or in a compact day. jsonb
 * equality ignores key order and the spelling of a number (50 and 50.0 are equal; a compact day's
 * values come back as the same doubles), so a retry is never a conflict.
 */
export const CONFLICTING_SQL = `SELECT i.n FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::jsonb[]) WITH ORDINALITY AS i (device_id, battery_id, ts, metrics, n)
  CROSS JOIN LATERAL ${readings('i.device_id', 'i.battery_id', 'i.ts', "i.ts + interval '1 microsecond'")} AS t
  WHERE t.ts = i.ts AND t.metrics <> i.metrics`;
