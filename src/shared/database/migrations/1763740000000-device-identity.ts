import type { MigrationInterface, QueryRunner } from 'typeorm';

export class DeviceIdentity1763740000000 implements MigrationInterface {
  name = 'DeviceIdentity1763740000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE devices (
        device_id varchar(64) PRIMARY KEY,
        hardware_id varchar(128) NOT NULL,
        firmware_version varchar(64) NOT NULL,
        claim_code_hash text NULL,
        secret_hash varchar(64) NOT NULL,
        token_version integer NOT NULL DEFAULT 1,
        registered_at timestamptz NOT NULL,
        credentials_issued_at timestamptz NOT NULL,
        credentials_used_at timestamptz NULL,
        last_seen_at timestamptz NULL,
        owner_id uuid NULL,
        claimed_at timestamptz NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE device_refresh_tokens (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        device_id varchar(64) NOT NULL REFERENCES devices (device_id) ON DELETE CASCADE,
        token_hash varchar(64) NOT NULL,
        token_version integer NOT NULL,
        issued_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        rotated_at timestamptz NULL,
        revoked_at timestamptz NULL
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX device_refresh_tokens_hash_key ON device_refresh_tokens (token_hash)');
    await queryRunner.query('CREATE INDEX device_refresh_tokens_device_idx ON device_refresh_tokens (device_id)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE device_refresh_tokens');
    await queryRunner.query('DROP TABLE devices');
  }
}
