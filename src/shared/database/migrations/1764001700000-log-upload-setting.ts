import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The fleet defaults gain logUpload (`errors`: gateways upload their error lines); a value already
 * there wins. The revision stays: `errors` is what a gateway assumes when its configuration has no
 * logUpload, so none needs to fetch its configuration for it; each learns the key with its next
 * configuration change.
 */
export class LogUploadSetting1764001700000 implements MigrationInterface {
  name = 'LogUploadSetting1764001700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE config_defaults SET settings = '{"logUpload":"errors"}'::jsonb || settings`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query("UPDATE config_defaults SET settings = settings - 'logUpload'");
  }
}
