import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Crash reports and reboot reasons (the crashes module): one row per report, idempotent by the
 * gateway's crash id, with the signature its group is known by (reset reason and the top frames of
 * the backtrace). Groups are computed from the reports by signature.
 */
export class DeviceCrashes1764001800000 implements MigrationInterface {
  name = 'DeviceCrashes1764001800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE device_crashes (
        device_id varchar(64) NOT NULL CONSTRAINT device_crashes_device_id_fkey REFERENCES devices (device_id) ON DELETE CASCADE,
        crash_id varchar(64) NOT NULL,
        ts timestamptz NOT NULL,
        firmware_version varchar(40) NOT NULL,
        reset_reason varchar(16) NOT NULL,
        uptime_sec bigint NOT NULL,
        panic jsonb NULL,
        signature char(16) NOT NULL,
        received_at timestamptz NOT NULL,
        CONSTRAINT device_crashes_pkey PRIMARY KEY (device_id, crash_id)
      )`);
    await queryRunner.query('CREATE INDEX device_crashes_signature_idx ON device_crashes (signature, received_at)');
    await queryRunner.query('CREATE INDEX device_crashes_device_ts_idx ON device_crashes (device_id, ts)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE device_crashes');
  }
}
