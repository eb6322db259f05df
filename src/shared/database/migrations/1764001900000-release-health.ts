import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Release health. Releases gain min_crash_free_percent: a staged rollout pauses itself when fewer
 * of the devices that confirmed booting it stayed crash-free for a day. The crashes module exports
 * the question as a function, device_crashed(device, version, from, until): did the device report a
 * crash (not a reboot reason) of that firmware version within [from, until), gateway time.
 */
export class ReleaseHealth1764001900000 implements MigrationInterface {
  name = 'ReleaseHealth1764001900000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE firmware_releases ADD COLUMN min_crash_free_percent smallint NULL CONSTRAINT firmware_releases_min_crash_free_percent_check CHECK (min_crash_free_percent BETWEEN 0 AND 100)',
    );
    await queryRunner.query(`
      CREATE FUNCTION device_crashed(p_device_id varchar, p_version varchar, p_from timestamptz, p_until timestamptz) RETURNS boolean
      LANGUAGE sql STABLE AS $$
        SELECT EXISTS (
          SELECT 1 FROM device_crashes
           WHERE device_id = p_device_id AND ts >= p_from AND ts < p_until
             AND reset_reason IN ('panic', 'int_wdt', 'task_wdt', 'wdt', 'cpu_lockup')
             AND firmware_version_key(firmware_version) = firmware_version_key(p_version))
      $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION device_crashed(varchar, varchar, timestamptz, timestamptz)');
    await queryRunner.query('ALTER TABLE firmware_releases DROP COLUMN min_crash_free_percent');
  }
}
