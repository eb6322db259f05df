import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Telemetry is one table partitioned by month on the measurement time: retention drops whole
 * partitions, and a device's time-range read touches only the months it spans. Partitions are
 * created ahead by TelemetryPartitions (at start and daily), not here.
 */
export class Telemetry1763760000000 implements MigrationInterface {
  name = 'Telemetry1763760000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE telemetry (
        device_id varchar(64) NOT NULL,
        battery_id varchar(64) NOT NULL,
        ts timestamptz NOT NULL,
        metrics jsonb NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (device_id, ts, battery_id)
      ) PARTITION BY RANGE (ts)`);
    await queryRunner.query(`
      CREATE TABLE telemetry_rollup_5m (
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
    await queryRunner.query('CREATE INDEX telemetry_rollup_5m_bucket_idx ON telemetry_rollup_5m (bucket)');
    await queryRunner.query(`
      CREATE TABLE device_latest_metrics (
        device_id varchar(64) NOT NULL REFERENCES devices (device_id) ON DELETE CASCADE,
        battery_id varchar(64) NOT NULL,
        metric varchar(40) NOT NULL,
        ts timestamptz NOT NULL,
        value double precision NOT NULL,
        PRIMARY KEY (device_id, battery_id, metric)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE device_latest_metrics');
    await queryRunner.query('DROP TABLE telemetry_rollup_5m');
    await queryRunner.query('DROP TABLE telemetry');
  }
}
