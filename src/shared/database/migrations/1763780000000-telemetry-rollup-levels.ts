import type { MigrationInterface, QueryRunner } from 'typeorm';

const LEVELS = [
  { table: 'telemetry_rollup_1h', width: '1 hour' },
  { table: 'telemetry_rollup_1d', width: '1 day' },
];

/**
 * Hourly and daily rollups beside the 5-minute one, so a long trend reads a few hundred rows
 * instead of tens of thousands. Same columns; buckets aligned to the Unix epoch (UTC days). The
 * existing 5-minute rows are summed into the new levels, which ingest keeps current from then on.
 */
export class TelemetryRollupLevels1763780000000 implements MigrationInterface {
  name = 'TelemetryRollupLevels1763780000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const { table, width } of LEVELS) {
      await queryRunner.query(`
        CREATE TABLE ${table} (
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
      await queryRunner.query(`CREATE INDEX ${table}_bucket_idx ON ${table} (bucket)`);
      await queryRunner.query(`
        INSERT INTO ${table} (device_id, battery_id, metric, bucket, count, sum, min, max)
        SELECT device_id, battery_id, metric, date_bin('${width}', bucket, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
               sum(count), sum(sum), min(min), max(max)
          FROM telemetry_rollup_5m
         GROUP BY 1, 2, 3, 4`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const { table } of [...LEVELS].reverse()) await queryRunner.query(`DROP TABLE ${table}`);
  }
}
