import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Gateways' log lines (the device-logs module), partitioned by day on the line's time so that
 * retention drops a day at a time (DeviceLogPartitions adds and drops the days); and each device's
 * bytes stored per UTC day, against its daily quota. `line_hash` makes a retried batch store
 * nothing twice: a line is its device, its time and the hash of its level, tag and message.
 */
export class DeviceLogs1764001600000 implements MigrationInterface {
  name = 'DeviceLogs1764001600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE device_logs (
        device_id varchar(64) NOT NULL,
        ts timestamptz NOT NULL,
        line_hash bigint NOT NULL,
        level varchar(7) NOT NULL CONSTRAINT device_logs_level_check CHECK (level IN ('error', 'warn', 'info', 'debug', 'verbose')),
        tag varchar(32) NULL,
        message text NOT NULL,
        received_at timestamptz NOT NULL,
        CONSTRAINT device_logs_pkey PRIMARY KEY (device_id, ts, line_hash)
      ) PARTITION BY RANGE (ts)`);
    await queryRunner.query(`
      CREATE TABLE device_log_usage (
        device_id varchar(64) NOT NULL CONSTRAINT device_log_usage_device_id_fkey REFERENCES devices (device_id) ON DELETE CASCADE,
        day date NOT NULL,
        bytes bigint NOT NULL,
        CONSTRAINT device_log_usage_pkey PRIMARY KEY (device_id, day)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE device_log_usage');
    await queryRunner.query('DROP TABLE device_logs');
  }
}
