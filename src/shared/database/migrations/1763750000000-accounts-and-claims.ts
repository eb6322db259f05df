import type { MigrationInterface, QueryRunner } from 'typeorm';

export class AccountsAndClaims1763750000000 implements MigrationInterface {
  name = 'AccountsAndClaims1763750000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        email varchar(254) NOT NULL,
        password_hash text NOT NULL,
        role varchar(16) NOT NULL DEFAULT 'customer' CHECK (role IN ('customer', 'admin')),
        email_verified_at timestamptz NULL,
        token_version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX users_email_key ON users (email)');
    await queryRunner.query(`
      CREATE TABLE email_verification_tokens (
        token_hash varchar(64) PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        expires_at timestamptz NOT NULL,
        used_at timestamptz NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE user_refresh_tokens (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        token_hash varchar(64) NOT NULL,
        token_version integer NOT NULL,
        issued_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        rotated_at timestamptz NULL,
        revoked_at timestamptz NULL
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX user_refresh_tokens_hash_key ON user_refresh_tokens (token_hash)');
    await queryRunner.query('CREATE INDEX user_refresh_tokens_user_idx ON user_refresh_tokens (user_id)');

    await queryRunner.query(`
      ALTER TABLE devices
        ADD COLUMN re_registration_until timestamptz NULL,
        ADD COLUMN visible_since timestamptz NULL,
        ADD COLUMN last_released_at timestamptz NULL,
        ADD CONSTRAINT devices_owner_fk FOREIGN KEY (owner_id) REFERENCES users (id)`);
    await queryRunner.query('CREATE INDEX devices_owner_idx ON devices (owner_id) WHERE owner_id IS NOT NULL');

    await queryRunner.query(`
      CREATE TABLE claim_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL,
        user_id uuid NOT NULL,
        device_id varchar(64) NOT NULL,
        action varchar(20) NOT NULL,
        outcome varchar(40) NOT NULL,
        client_address varchar(64) NOT NULL
      )`);
    await queryRunner.query('CREATE INDEX claim_audit_device_idx ON claim_audit (device_id, at)');

    await queryRunner.query(`
      CREATE TABLE registration_allowlist (
        device_id varchar(64) PRIMARY KEY,
        hardware_id varchar(128) NOT NULL,
        imported_by uuid NOT NULL,
        imported_at timestamptz NOT NULL
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE registration_allowlist');
    await queryRunner.query('DROP TABLE claim_audit');
    await queryRunner.query('ALTER TABLE devices DROP CONSTRAINT devices_owner_fk');
    await queryRunner.query('DROP INDEX devices_owner_idx');
    await queryRunner.query('ALTER TABLE devices DROP COLUMN re_registration_until, DROP COLUMN visible_since, DROP COLUMN last_released_at');
    await queryRunner.query('DROP TABLE user_refresh_tokens');
    await queryRunner.query('DROP TABLE email_verification_tokens');
    await queryRunner.query('DROP TABLE users');
  }
}
