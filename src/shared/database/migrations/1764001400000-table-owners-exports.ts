import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What modules export of their tables to other modules' SQL, where one statement must stay one
 * statement (the ingest flush, the OTA rollout counts, the dashboard's lists): each table is read
 * and written in SQL by its owner alone, and these views and functions are the owners' words for
 * what others may do. Plain SQL: PostgreSQL expands the views and runs the functions' statements
 * with the plans of the statements they replace.
 *
 * devices:
 * - devices_seen: the ingest statement's "telemetry arrived" write (last_seen_at and
 *   last_telemetry_at only move forward), rows locked in device order so concurrent flushes never
 *   deadlock (NO KEY: rows that reference a device take KEY SHARE locks, which must not make ingest
 *   wait). It answers offline_since: a device marked offline is back, which the devices module
 *   records itself (device.online with its dispatch job, in one transaction).
 * batteries:
 * - battery_energy_mark_stale: marks the UTC hours whose energy the given charge records change
 *   (their hour; the hour before for a record in an hour's first 15 minutes, the one after for one
 *   in its last 15), grouped by hour first so a batch costs a row per hour it touches. An existing
 *   mark is locked, not skipped (`DO UPDATE … WHERE false` takes the row lock without writing a new
 *   version), so a recomputation cannot take it before the records commit; marks are locked in the
 *   order the recomputation takes them. Answers how many marks are new.
 * - battery_energy_forget_before: telemetry's retention, applied to the hours computed from it.
 * telemetry:
 * - telemetry_readings, telemetry_latest, telemetry_hourly, telemetry_daily: the records, the
 *   newest value per battery and metric, and the 1-hour and 1-day rollups.
 */
export class TableOwnersExports1764001400000 implements MigrationInterface {
  name = 'TableOwnersExports1764001400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION devices_seen(p_device_ids text[], p_at timestamptz)
      RETURNS TABLE (device_id text, owner_id uuid, offline_since timestamptz) LANGUAGE sql AS $$
        UPDATE devices d SET last_seen_at = GREATEST(d.last_seen_at, p_at), last_telemetry_at = GREATEST(d.last_telemetry_at, p_at)
          FROM (SELECT s.device_id FROM devices s WHERE s.device_id = ANY (p_device_ids) ORDER BY s.device_id FOR NO KEY UPDATE) AS seen
         WHERE d.device_id = seen.device_id
        RETURNING d.device_id::text, d.owner_id, d.offline_since
      $$`);

    await queryRunner.query(`
      CREATE FUNCTION battery_energy_mark_stale(p_device_ids text[], p_battery_ids text[], p_ts timestamptz[])
      RETURNS bigint LANGUAGE sql AS $$
        WITH charged_hours AS (
          SELECT device_id, battery_id, date_bin('1 hour', ts, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS hour, min(ts) AS first, max(ts) AS last
            FROM unnest(p_device_ids, p_battery_ids, p_ts) AS r (device_id, battery_id, ts)
           GROUP BY 1, 2, 3
        ), marked AS (
          INSERT INTO battery_energy_stale (device_id, battery_id, bucket)
          SELECT DISTINCT device_id, battery_id, bucket FROM (
            SELECT device_id, battery_id, hour AS bucket FROM charged_hours
            UNION ALL
            SELECT device_id, battery_id, hour - interval '1 hour' FROM charged_hours WHERE first < hour + interval '15 minutes'
            UNION ALL
            SELECT device_id, battery_id, hour + interval '1 hour' FROM charged_hours WHERE last >= hour + interval '45 minutes'
          ) AS marks
          ORDER BY 1, 2, 3
          ON CONFLICT (device_id, battery_id, bucket) DO UPDATE SET bucket = EXCLUDED.bucket WHERE false
          RETURNING 1
        )
        SELECT count(*) FROM marked
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION battery_energy_forget_before(p_before timestamptz) RETURNS void LANGUAGE sql AS $$
        DELETE FROM battery_energy_1h WHERE bucket < p_before;
        DELETE FROM battery_energy_stale WHERE bucket < p_before;
      $$`);

    await queryRunner.query('CREATE VIEW telemetry_readings AS SELECT device_id, battery_id, ts, metrics FROM telemetry');
    await queryRunner.query('CREATE VIEW telemetry_latest AS SELECT device_id, battery_id, metric, ts, value FROM device_latest_metrics');
    await queryRunner.query('CREATE VIEW telemetry_hourly AS SELECT device_id, battery_id, metric, bucket, count, sum, min, max FROM telemetry_rollup_1h');
    await queryRunner.query('CREATE VIEW telemetry_daily AS SELECT device_id, battery_id, metric, bucket, count, sum, min, max FROM telemetry_rollup_1d');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP VIEW telemetry_daily');
    await queryRunner.query('DROP VIEW telemetry_hourly');
    await queryRunner.query('DROP VIEW telemetry_latest');
    await queryRunner.query('DROP VIEW telemetry_readings');
    await queryRunner.query('DROP FUNCTION battery_energy_forget_before(timestamptz)');
    await queryRunner.query('DROP FUNCTION battery_energy_mark_stale(text[], text[], timestamptz[])');
    await queryRunner.query('DROP FUNCTION devices_seen(text[], timestamptz)');
  }
}
