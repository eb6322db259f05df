import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Firmware campaigns (the ota module): a release may target device tags and explicit device ids,
 * start at a given time, and, once revoked, name the release its devices go back to. The devices
 * module's change trigger now also announces tag changes, which OTA decisions read from the device
 * snapshots (devices' own migration ConfigAndOta created the trigger).
 */
export class FirmwareCampaigns1764002300000 implements MigrationInterface {
  name = 'FirmwareCampaigns1764002300000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE firmware_releases
        ADD COLUMN target_tags text[] NULL,
        ADD COLUMN target_device_ids text[] NULL,
        ADD COLUMN starts_at timestamptz NULL,
        ADD COLUMN rollback_to uuid NULL CONSTRAINT firmware_releases_rollback_to_fkey REFERENCES firmware_releases (id),
        ADD CONSTRAINT firmware_releases_target_device_ids_check CHECK (cardinality(target_device_ids) <= 10000)`);
    await queryRunner.query('DROP TRIGGER devices_announce_change ON devices');
    await queryRunner.query(`
      CREATE TRIGGER devices_announce_change AFTER UPDATE ON devices FOR EACH ROW
      WHEN ((OLD.token_version, OLD.credentials_used_at IS NULL, OLD.hardware_id, OLD.firmware_version, OLD.config_overrides, OLD.config_revision, OLD.config_updated_at, OLD.tags)
            IS DISTINCT FROM
            (NEW.token_version, NEW.credentials_used_at IS NULL, NEW.hardware_id, NEW.firmware_version, NEW.config_overrides, NEW.config_revision, NEW.config_updated_at, NEW.tags))
      EXECUTE FUNCTION announce_change()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER devices_announce_change ON devices');
    await queryRunner.query(`
      CREATE TRIGGER devices_announce_change AFTER UPDATE ON devices FOR EACH ROW
      WHEN ((OLD.token_version, OLD.credentials_used_at IS NULL, OLD.hardware_id, OLD.firmware_version, OLD.config_overrides, OLD.config_revision, OLD.config_updated_at)
            IS DISTINCT FROM
            (NEW.token_version, NEW.credentials_used_at IS NULL, NEW.hardware_id, NEW.firmware_version, NEW.config_overrides, NEW.config_revision, NEW.config_updated_at))
      EXECUTE FUNCTION announce_change()`);
    await queryRunner.query(
      'ALTER TABLE firmware_releases DROP CONSTRAINT firmware_releases_target_device_ids_check, DROP COLUMN rollback_to, DROP COLUMN starts_at, DROP COLUMN target_device_ids, DROP COLUMN target_tags',
    );
  }
}
