import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Signed firmware (the ota module): the firmware team's Ed25519 public keys, and on each release the
 * key, the signature and the manifest it covers (domain/firmware-manifest.ts). The manifest is kept
 * as signed, so a release verifies the same way whatever later versions of the format do.
 */
export class FirmwareSigning1764002100000 implements MigrationInterface {
  name = 'FirmwareSigning1764002100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE firmware_signing_keys (
        key_id varchar(64) NOT NULL,
        public_key bytea NOT NULL,
        fingerprint varchar(32) NOT NULL,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz NULL,
        CONSTRAINT firmware_signing_keys_pkey PRIMARY KEY (key_id),
        CONSTRAINT firmware_signing_keys_public_key_check CHECK (octet_length(public_key) = 32)
      )`);
    await queryRunner.query(`
      ALTER TABLE firmware_releases
        ADD COLUMN signing_key_id varchar(64) NULL CONSTRAINT firmware_releases_signing_key_id_fkey REFERENCES firmware_signing_keys (key_id),
        ADD COLUMN signature bytea NULL,
        ADD COLUMN manifest text NULL,
        ADD CONSTRAINT firmware_releases_signed_check CHECK ((signing_key_id IS NULL) = (signature IS NULL) AND (signature IS NULL) = (manifest IS NULL))`);
    await queryRunner.query('CREATE INDEX firmware_releases_signing_key_id_idx ON firmware_releases (signing_key_id) WHERE signing_key_id IS NOT NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE firmware_releases DROP CONSTRAINT firmware_releases_signed_check, DROP COLUMN manifest, DROP COLUMN signature, DROP COLUMN signing_key_id');
    await queryRunner.query('DROP TABLE firmware_signing_keys');
  }
}
