import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The values of one compact day within [lo, hi) (also restored by TelemetryHours1764002800000's down). */
export const DAY_VALUES_FUNCTION = `      CREATE OR REPLACE FUNCTION telemetry_day_values(
        day timestamptz, metrics text[], divisors float8[], bases float8[], records int[], slots int2[], offsets int[], vals float8[], lo timestamptz, hi timestamptz)
      RETURNS TABLE (ts timestamptz, metric text, value double precision) LANGUAGE sql STABLE PARALLEL SAFE AS $$
        WITH bounds AS (
          SELECT greatest(0, floor(extract(epoch FROM lo - telemetry_day_values.day) / 300))::int AS first_slot,
                 least(287, ceil(extract(epoch FROM hi - telemetry_day_values.day) / 300)::int - 1) AS last_slot
        ), span AS (
          SELECT coalesce((SELECT sum(c) FROM unnest(telemetry_day_values.records[1:b.first_slot]) AS c), 0)::int + 1 AS first_k,
                 coalesce((SELECT sum(c) FROM unnest(telemetry_day_values.records[1:b.last_slot + 1]) AS c), 0)::int AS last_k
            FROM bounds b WHERE b.first_slot <= b.last_slot
        ), a AS (
          SELECT s.first_k, s.last_k - s.first_k + 1 AS len, cardinality(telemetry_day_values.offsets) AS n,
                 telemetry_day_values.slots[s.first_k:s.last_k] AS slots, telemetry_day_values.offsets[s.first_k:s.last_k] AS offsets, telemetry_day_values.vals || '{}'::float8[] AS vals
            FROM span s OFFSET 0
        )
        SELECT v.ts, m.name, CASE WHEN m.divisor IS NULL THEN v.x ELSE (m.base + v.x) / m.divisor END
          FROM a
         CROSS JOIN unnest(telemetry_day_values.metrics, telemetry_day_values.divisors, telemetry_day_values.bases) WITH ORDINALITY AS m (name, divisor, base, i)
         CROSS JOIN LATERAL (
           SELECT telemetry_day_values.day + make_interval(secs => u.slot * 300) + u.us * interval '1 microsecond' AS ts, u.x
             FROM unnest(a.slots, a.offsets, a.vals[(m.i - 1) * a.n + a.first_k:(m.i - 1) * a.n + a.first_k + a.len - 1]) AS u (slot, us, x)
         ) AS v
         WHERE v.x IS NOT NULL AND v.ts >= lo AND v.ts < hi
      $$`;

/** The records of one device in [p_from, p_to), of one battery or (NULL) all: rows and compact days alike. */
export const DAY_READINGS_FUNCTION = `      CREATE OR REPLACE FUNCTION telemetry_readings(p_device_id text, p_battery_id text, p_from timestamptz, p_to timestamptz)
      RETURNS TABLE (battery_id text, ts timestamptz, metrics jsonb) LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT t.battery_id::text, t.ts, t.metrics FROM telemetry t
         WHERE t.device_id = p_device_id AND t.ts >= p_from AND t.ts < p_to AND (p_battery_id IS NULL OR t.battery_id = p_battery_id)
        UNION ALL
        SELECT d.battery_id::text, v.ts, jsonb_object_agg(v.metric, v.value)
          FROM telemetry_days d CROSS JOIN LATERAL telemetry_day_values(d.day, d.metrics, d.divisors, d.bases, d.records, d.slots, d.offsets, d.vals, p_from, p_to) AS v
         WHERE d.device_id = p_device_id AND d.day > p_from - interval '1 day' AND d.day < p_to
           AND (p_battery_id IS NULL OR d.battery_id = p_battery_id)
         GROUP BY d.battery_id, v.ts
      $$`;

/**
 * Settled telemetry in a compact layout: one row per device, battery and UTC day (`telemetry_days`)
 * holds the day's records as arrays and its five-minute rollup as arrays of 288 slots; the
 * telemetry module's compaction moves each day there once it is older than the settled window
 * (docs/architecture.md, "Telemetry on disk"). Records that arrive later stay rows until the next
 * compaction of their day; every read takes both.
 *
 * The records' arrays, `n` records in time order:
 * - `slots` (n): each record's five-minute slot of the day (0–287); `offsets` (n): microseconds
 *   after that slot's start; `records` (288): how many records each slot holds.
 * - `vals` (M × n, metric-major in the order of `metrics`): NULL where a record lacks the metric.
 *   A metric whose values are decimals of at most 15 places below 2^50 once scaled is stored as
 *   integers: `divisors[m]` = 10^places, `bases[m]` = the day's smallest scaled value, and
 *   `vals` the scaled value minus the base. The value is (base + val) / divisor, exactly the
 *   double the gateway sent (an integer below 2^53 divided by an exact power of ten rounds to the
 *   double nearest the decimal). Other metrics keep their values as they are (`divisors[m]` NULL).
 *   Small integers compress well with pglz; raw doubles would not.
 * - `slot_count`, `slot_sum`, `slot_min`, `slot_max` (M × 288): the five-minute rollup, exactly the
 *   rows it replaces (`slot_count` 0, the others NULL, where a slot has no value of the metric).
 *
 * The view `telemetry_readings` (the records, for other modules' SQL) becomes the function of the
 * same name: a view could not take the day range into the compact rows' index.
 */
export class TelemetryDays1764002700000 implements MigrationInterface {
  name = 'TelemetryDays1764002700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE telemetry_days (
        device_id varchar(64) NOT NULL,
        day timestamptz NOT NULL,
        battery_id varchar(64) NOT NULL,
        metrics text[] NOT NULL,
        divisors double precision[] NOT NULL,
        bases double precision[] NOT NULL,
        records integer[] NOT NULL,
        slots smallint[] NOT NULL,
        offsets integer[] NOT NULL,
        vals double precision[] NOT NULL,
        slot_count integer[] NOT NULL,
        slot_sum double precision[] NOT NULL,
        slot_min double precision[] NOT NULL,
        slot_max double precision[] NOT NULL,
        CONSTRAINT telemetry_days_pkey PRIMARY KEY (device_id, day, battery_id)
      )`);
    // lz4 where the server is built with it (Debian's and the managed services' are; the embedded
    // server of `npm start` is not, and keeps PostgreSQL's own pglz).
    await queryRunner.query(`
      DO $$ BEGIN
        ALTER TABLE telemetry_days ALTER COLUMN vals SET COMPRESSION lz4, ALTER COLUMN offsets SET COMPRESSION lz4,
          ALTER COLUMN slots SET COMPRESSION lz4, ALTER COLUMN slot_count SET COMPRESSION lz4, ALTER COLUMN slot_sum SET COMPRESSION lz4,
          ALTER COLUMN slot_min SET COMPRESSION lz4, ALTER COLUMN slot_max SET COMPRESSION lz4;
      EXCEPTION WHEN feature_not_supported THEN NULL;
      END $$`);

    // The values of one compact day within [lo, hi): only the slots that meet the range are read.
    // Each array is read (decompressed) once, in the subquery \`a\` (OFFSET 0 keeps it one), and
    // then sliced per metric: a slice of a stored array would decompress the whole array again.
    await queryRunner.query(DAY_VALUES_FUNCTION);

    // The five-minute slots of one compact day that lie in [lo, hi), as rollup rows (each array
    // read once, as above).
    await queryRunner.query(`
      CREATE FUNCTION telemetry_day_slots(
        day timestamptz, metrics text[], slot_count int[], slot_sum float8[], slot_min float8[], slot_max float8[], lo timestamptz, hi timestamptz)
      RETURNS TABLE (metric text, bucket timestamptz, count integer, sum double precision, min double precision, max double precision)
      LANGUAGE sql STABLE PARALLEL SAFE AS $$
        WITH bounds AS (
          SELECT greatest(0, ceil(extract(epoch FROM lo - telemetry_day_slots.day) / 300))::int AS first_slot,
                 least(288, floor(extract(epoch FROM hi - telemetry_day_slots.day) / 300)::int) - 1 AS last_slot
        ), a AS (
          SELECT b.first_slot, b.last_slot, telemetry_day_slots.slot_count || '{}'::int[] AS count, telemetry_day_slots.slot_sum || '{}'::float8[] AS sum,
                 telemetry_day_slots.slot_min || '{}'::float8[] AS min, telemetry_day_slots.slot_max || '{}'::float8[] AS max
            FROM bounds b WHERE b.first_slot <= b.last_slot OFFSET 0
        )
        SELECT m.name, telemetry_day_slots.day + make_interval(secs => (a.first_slot + u.j - 1) * 300), u.count, u.sum, u.min, u.max
          FROM a
         CROSS JOIN unnest(telemetry_day_slots.metrics) WITH ORDINALITY AS m (name, i)
         CROSS JOIN LATERAL unnest(a.count[(m.i - 1) * 288 + a.first_slot + 1:(m.i - 1) * 288 + a.last_slot + 1],
                                   a.sum[(m.i - 1) * 288 + a.first_slot + 1:(m.i - 1) * 288 + a.last_slot + 1],
                                   a.min[(m.i - 1) * 288 + a.first_slot + 1:(m.i - 1) * 288 + a.last_slot + 1],
                                   a.max[(m.i - 1) * 288 + a.first_slot + 1:(m.i - 1) * 288 + a.last_slot + 1])
                    WITH ORDINALITY AS u (count, sum, min, max, j)
         WHERE u.count > 0
      $$`);

    // The records of one device in [p_from, p_to), of one battery or (NULL) all: rows and compact days alike.
    await queryRunner.query('DROP VIEW telemetry_readings');
    await queryRunner.query(DAY_READINGS_FUNCTION);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION telemetry_readings(text, text, timestamptz, timestamptz)');
    await queryRunner.query('CREATE VIEW telemetry_readings AS SELECT device_id, battery_id, ts, metrics FROM telemetry');
    await queryRunner.query('DROP FUNCTION telemetry_day_slots(timestamptz, text[], int[], float8[], float8[], float8[], timestamptz, timestamptz)');
    await queryRunner.query('DROP FUNCTION telemetry_day_values(timestamptz, text[], float8[], float8[], int[], int2[], int[], float8[], timestamptz, timestamptz)');
    await queryRunner.query('DROP TABLE telemetry_days');
  }
}
