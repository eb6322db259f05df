import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Firmware images kept by the service (the ota module), so every instance serves them and the
 * database backup holds them. A release published without a URL waits for its image
 * (awaiting_image) and is offered once the image is stored whole; its chunks are 256 KiB, stored
 * uncompressed (firmware does not compress, and a range read then fetches only the bytes asked).
 */
export class FirmwareImages1764002200000 implements MigrationInterface {
  name = 'FirmwareImages1764002200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE firmware_releases ADD COLUMN awaiting_image boolean NOT NULL DEFAULT false');
    await queryRunner.query(`
      CREATE TABLE firmware_image_chunks (
        release_id uuid NOT NULL CONSTRAINT firmware_image_chunks_release_id_fkey REFERENCES firmware_releases (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        data bytea NOT NULL,
        CONSTRAINT firmware_image_chunks_pkey PRIMARY KEY (release_id, seq)
      )`);
    await queryRunner.query('ALTER TABLE firmware_image_chunks ALTER COLUMN data SET STORAGE EXTERNAL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE firmware_image_chunks');
    await queryRunner.query('ALTER TABLE firmware_releases DROP COLUMN awaiting_image');
  }
}
