import type { MigrationInterface, QueryRunner } from 'typeorm';
import { DAY_READINGS_FUNCTION, DAY_VALUES_FUNCTION } from './1764002700000-telemetry-days.js';

/**
 * A compact day's records move into one row per hour (`telemetry_hours`); `telemetry_days` keeps
 * the day's five-minute rollup. PostgreSQL decompresses a stored array whole, so a read of a few
 * minutes of a compact day (the edge of a history range, a raw page) unpacked the day's every
 * value (~276 KB for four metrics at one record per 10 s); an hour's are 1/24 of that, while the
 * five-minute slots of the day are still read from one row.
 *
 * An hour row has the arrays a day row had, for the hour: `slots` (0–11) and `offsets`
 * (microseconds after the slot's start) per record, `records` (12) per slot, `vals` (M × n,
 * metric-major in the order of `metrics`) with `divisors` and `bases` per metric, as the migration
 * TelemetryDays1764002700000 describes them.
 *
 * Existing compact days are cut into hours here with the day's divisors and bases (still exact:
 * the encoding is per metric, not per hour); later compactions choose them per hour.
 */
export class TelemetryHours1764002800000 implements MigrationInterface {
  name = 'TelemetryHours1764002800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE telemetry_hours (
        device_id varchar(64) NOT NULL,
        hour timestamptz NOT NULL,
        battery_id varchar(64) NOT NULL,
        metrics text[] NOT NULL,
        divisors double precision[] NOT NULL,
        bases double precision[] NOT NULL,
        records integer[] NOT NULL,
        slots smallint[] NOT NULL,
        offsets integer[] NOT NULL,
        vals double precision[] NOT NULL,
        CONSTRAINT telemetry_hours_pkey PRIMARY KEY (device_id, hour, battery_id)
      )`);
    await queryRunner.query(`
      DO $$ BEGIN
        ALTER TABLE telemetry_hours ALTER COLUMN vals SET COMPRESSION lz4, ALTER COLUMN offsets SET COMPRESSION lz4, ALTER COLUMN slots SET COMPRESSION lz4;
      EXCEPTION WHEN feature_not_supported THEN NULL;
      END $$`);

    // The values of one compact hour within [lo, hi), as telemetry_day_values read a day's.
    await queryRunner.query(`
      CREATE FUNCTION telemetry_hour_values(
        hour timestamptz, metrics text[], divisors float8[], bases float8[], records int[], slots int2[], offsets int[], vals float8[], lo timestamptz, hi timestamptz)
      RETURNS TABLE (ts timestamptz, metric text, value double precision) LANGUAGE sql STABLE PARALLEL SAFE AS $$
        WITH bounds AS (
          SELECT greatest(0, floor(extract(epoch FROM lo - telemetry_hour_values.hour) / 300))::int AS first_slot,
                 least(11, ceil(extract(epoch FROM hi - telemetry_hour_values.hour) / 300)::int - 1) AS last_slot
        ), span AS (
          SELECT coalesce((SELECT sum(c) FROM unnest(telemetry_hour_values.records[1:b.first_slot]) AS c), 0)::int + 1 AS first_k,
                 coalesce((SELECT sum(c) FROM unnest(telemetry_hour_values.records[1:b.last_slot + 1]) AS c), 0)::int AS last_k
            FROM bounds b WHERE b.first_slot <= b.last_slot
        ), a AS (
          SELECT s.first_k, s.last_k - s.first_k + 1 AS len, cardinality(telemetry_hour_values.offsets) AS n,
                 telemetry_hour_values.slots[s.first_k:s.last_k] AS slots, telemetry_hour_values.offsets[s.first_k:s.last_k] AS offsets, telemetry_hour_values.vals || '{}'::float8[] AS vals
            FROM span s OFFSET 0
        )
        SELECT v.ts, m.name, CASE WHEN m.divisor IS NULL THEN v.x ELSE (m.base + v.x) / m.divisor END
          FROM a
         CROSS JOIN unnest(telemetry_hour_values.metrics, telemetry_hour_values.divisors, telemetry_hour_values.bases) WITH ORDINALITY AS m (name, divisor, base, i)
         CROSS JOIN LATERAL (
           SELECT telemetry_hour_values.hour + make_interval(secs => u.slot * 300) + u.us * interval '1 microsecond' AS ts, u.x
             FROM unnest(a.slots, a.offsets, a.vals[(m.i - 1) * a.n + a.first_k:(m.i - 1) * a.n + a.first_k + a.len - 1]) AS u (slot, us, x)
         ) AS v
         WHERE v.x IS NOT NULL AND v.ts >= lo AND v.ts < hi
      $$`);

    // Each compact day cut into its hours: the hour's records are a contiguous run of the day's
    // (they are in time order), found from the per-slot counts. The subquery \`d\` reads each
    // array once (OFFSET 0 keeps it a subquery), not once per hour and metric.
    await queryRunner.query(`
      INSERT INTO telemetry_hours (device_id, hour, battery_id, metrics, divisors, bases, records, slots, offsets, vals)
      SELECT d.device_id, d.day + make_interval(hours => h.h), d.battery_id, d.metrics, d.divisors, d.bases,
             d.records[h.h * 12 + 1:h.h * 12 + 12],
             ARRAY(SELECT s - h.h * 12 FROM unnest(d.slots[k.first_k:k.last_k]) WITH ORDINALITY AS u (s, o) ORDER BY u.o)::int2[],
             d.offsets[k.first_k:k.last_k],
             ARRAY(SELECT x FROM generate_series(1, cardinality(d.metrics)) AS m (i)
                   CROSS JOIN LATERAL unnest(d.vals[(m.i - 1) * d.n + k.first_k:(m.i - 1) * d.n + k.last_k]) WITH ORDINALITY AS u (x, o)
                   ORDER BY m.i, u.o)
        FROM (SELECT device_id, day, battery_id, metrics, divisors, bases, records, slots || '{}'::int2[] AS slots, offsets || '{}'::int[] AS offsets,
                     vals || '{}'::float8[] AS vals, cardinality(offsets) AS n
                FROM telemetry_days OFFSET 0) AS d
       CROSS JOIN generate_series(0, 23) AS h (h)
       CROSS JOIN LATERAL (
         SELECT coalesce((SELECT sum(c) FROM unnest(d.records[1:h.h * 12]) AS c), 0)::int + 1 AS first_k,
                coalesce((SELECT sum(c) FROM unnest(d.records[1:h.h * 12 + 12]) AS c), 0)::int AS last_k
       ) AS k
       WHERE k.last_k >= k.first_k`);

    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION telemetry_readings(p_device_id text, p_battery_id text, p_from timestamptz, p_to timestamptz)
      RETURNS TABLE (battery_id text, ts timestamptz, metrics jsonb) LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT t.battery_id::text, t.ts, t.metrics FROM telemetry t
         WHERE t.device_id = p_device_id AND t.ts >= p_from AND t.ts < p_to AND (p_battery_id IS NULL OR t.battery_id = p_battery_id)
        UNION ALL
        SELECT h.battery_id::text, v.ts, jsonb_object_agg(v.metric, v.value)
          FROM telemetry_hours h CROSS JOIN LATERAL telemetry_hour_values(h.hour, h.metrics, h.divisors, h.bases, h.records, h.slots, h.offsets, h.vals, p_from, p_to) AS v
         WHERE h.device_id = p_device_id AND h.hour > p_from - interval '1 hour' AND h.hour < p_to
           AND (p_battery_id IS NULL OR h.battery_id = p_battery_id)
         GROUP BY h.battery_id, v.ts
      $$`);
    await queryRunner.query('DROP FUNCTION telemetry_day_values(timestamptz, text[], float8[], float8[], int[], int2[], int[], float8[], timestamptz, timestamptz)');
    await queryRunner.query('ALTER TABLE telemetry_days DROP COLUMN divisors, DROP COLUMN bases, DROP COLUMN records, DROP COLUMN slots, DROP COLUMN offsets, DROP COLUMN vals');
  }

  /**
   * Back to the day rows of TelemetryDays1764002700000, by way of rows: the compact records and
   * slots return to `telemetry` and `telemetry_rollup_5m` (the layout every read also takes), and
   * that version's compaction compacts them again.
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      INSERT INTO telemetry (device_id, battery_id, ts, metrics)
      SELECT h.device_id, h.battery_id, v.ts, jsonb_object_agg(v.metric, v.value)
        FROM telemetry_hours h CROSS JOIN LATERAL telemetry_hour_values(h.hour, h.metrics, h.divisors, h.bases, h.records, h.slots, h.offsets, h.vals, h.hour, h.hour + interval '1 hour') AS v
       GROUP BY h.device_id, h.battery_id, v.ts
      ON CONFLICT DO NOTHING`);
    await queryRunner.query(`
      INSERT INTO telemetry_rollup_5m (device_id, battery_id, metric, bucket, count, sum, min, max)
      SELECT d.device_id, d.battery_id, s.metric, s.bucket, s.count, s.sum, s.min, s.max
        FROM telemetry_days d CROSS JOIN LATERAL telemetry_day_slots(d.day, d.metrics, d.slot_count, d.slot_sum, d.slot_min, d.slot_max, d.day, d.day + interval '1 day') AS s
      ON CONFLICT (device_id, bucket, battery_id, metric) DO UPDATE
        SET count = telemetry_rollup_5m.count + excluded.count, sum = telemetry_rollup_5m.sum + excluded.sum,
            min = least(telemetry_rollup_5m.min, excluded.min), max = greatest(telemetry_rollup_5m.max, excluded.max)`);
    await queryRunner.query('DELETE FROM telemetry_days');
    await queryRunner.query(`
      ALTER TABLE telemetry_days ADD COLUMN divisors double precision[] NOT NULL, ADD COLUMN bases double precision[] NOT NULL,
        ADD COLUMN records integer[] NOT NULL, ADD COLUMN slots smallint[] NOT NULL, ADD COLUMN offsets integer[] NOT NULL,
        ADD COLUMN vals double precision[] NOT NULL`);
    await queryRunner.query(DAY_VALUES_FUNCTION);
    await queryRunner.query(DAY_READINGS_FUNCTION);
    await queryRunner.query('DROP TABLE telemetry_hours');
    await queryRunner.query('DROP FUNCTION telemetry_hour_values(timestamptz, text[], float8[], float8[], int[], int2[], int[], float8[], timestamptz, timestamptz)');
  }
}
