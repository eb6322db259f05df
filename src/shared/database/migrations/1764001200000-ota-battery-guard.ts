import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Battery-aware updates. The fleet defaults gain otaMinSoc (40 %) and
 * otaTemperatureRange (0–45 °C); keys already there win. The revision stays: what changes is a
 * rule the service applies to OTA offers, not a setting a gateway runs with, so no gateway needs
 * to fetch its configuration for it. A release a poll held back is remembered per device
 * (`held_back` while never offered; held_back_reason until the next offer) for the release's status counts.
 */
export class OtaBatteryGuard1764001200000 implements MigrationInterface {
  name = 'OtaBatteryGuard1764001200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE config_defaults SET settings = '{"otaMinSoc":40,"otaTemperatureRange":{"min":0,"max":45}}'::jsonb || settings`);
    await queryRunner.query('ALTER TABLE device_release_states DROP CONSTRAINT device_release_states_state_check');
    await queryRunner.query(`
      ALTER TABLE device_release_states
        ADD CONSTRAINT device_release_states_state_check CHECK (state IN ('held_back', 'offered', 'downloading', 'installing', 'installed', 'failed', 'rolled_back')),
        ADD COLUMN held_back_reason varchar(16) NULL CONSTRAINT device_release_states_held_back_reason_check CHECK (held_back_reason IN ('LOW_SOC', 'TEMPERATURE')),
        ADD COLUMN held_back_at timestamptz NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("DELETE FROM device_release_states WHERE state = 'held_back'");
    await queryRunner.query('ALTER TABLE device_release_states DROP COLUMN held_back_at, DROP COLUMN held_back_reason, DROP CONSTRAINT device_release_states_state_check');
    await queryRunner.query("ALTER TABLE device_release_states ADD CONSTRAINT device_release_states_state_check CHECK (state IN ('offered', 'downloading', 'installing', 'installed', 'failed', 'rolled_back'))");
    await queryRunner.query("UPDATE config_defaults SET settings = settings - 'otaMinSoc' - 'otaTemperatureRange'");
  }
}
