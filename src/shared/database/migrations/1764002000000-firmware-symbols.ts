import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Symbol maps of firmware releases (the ota module): code address ranges and the functions they
 * belong to, as an administrator uploaded them, so crash backtraces name functions.
 */
export class FirmwareSymbols1764002000000 implements MigrationInterface {
  name = 'FirmwareSymbols1764002000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE firmware_symbols (
        release_id uuid NOT NULL CONSTRAINT firmware_symbols_release_id_fkey REFERENCES firmware_releases (id) ON DELETE CASCADE,
        symbols jsonb NOT NULL,
        symbol_count integer NOT NULL,
        uploaded_at timestamptz NOT NULL,
        CONSTRAINT firmware_symbols_pkey PRIMARY KEY (release_id)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE firmware_symbols');
  }
}
