import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Names and tags of devices. No index for the fleet filters: under the generic plans of
 * the service's sessions the list reads its page along the primary key (customers along the owner
 * index) and filters as it goes, and neither a GIN index on tags nor one on firmware_version was
 * chosen for it (measured on 20,000 and 100,000 devices; README, Names, tags and fleet filters).
 */
export class DeviceLabels1764000700000 implements MigrationInterface {
  name = 'DeviceLabels1764000700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE devices ADD COLUMN name varchar(64) NULL, ADD COLUMN tags text[] NOT NULL DEFAULT '{}'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE devices DROP COLUMN tags, DROP COLUMN name');
  }
}
