import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A 6-hour rollup level between the hourly and the daily one: the dashboard's 30-day trend (auto
 * bucket 6 h) reads 120 slots per series here instead of 720 hourly ones. Same columns, buckets
 * aligned to the Unix epoch (each UTC day holds four); existing 5-minute rows are summed into it,
 * and ingest keeps it current from then on.
 */
export class TelemetryRollup6h1763790000000 implements MigrationInterface {
  name = 'TelemetryRollup6h1763790000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE telemetry_rollup_6h (
        device_id varchar(64) NOT NULL,
        battery_id varchar(64) NOT NULL,
        metric varchar(40) NOT NULL,
        bucket timestamptz NOT NULL,
        count integer NOT NULL,
        sum double precision NOT NULL,
        min double precision NOT NULL,
        max double precision NOT NULL,
        PRIMARY KEY (device_id, bucket, battery_id, metric)
      )`);
    await queryRunner.query('CREATE INDEX telemetry_rollup_6h_bucket_idx ON telemetry_rollup_6h (bucket)');
    await queryRunner.query(`
      INSERT INTO telemetry_rollup_6h (device_id, battery_id, metric, bucket, count, sum, min, max)
      SELECT device_id, battery_id, metric, date_bin('6 hours', bucket, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
             sum(count), sum(sum), min(min), max(max)
        FROM telemetry_rollup_5m
       GROUP BY 1, 2, 3, 4`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE telemetry_rollup_6h');
  }
}
