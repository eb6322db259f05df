import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Password reset links: only the HMAC of a link's token is stored, one live link per
 * account (a new one replaces the older), deleted when used and with the account.
 */
export class PasswordReset1764000800000 implements MigrationInterface {
  name = 'PasswordReset1764000800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE password_reset_tokens (
      token_hash varchar(64) NOT NULL CONSTRAINT password_reset_tokens_pkey PRIMARY KEY,
      user_id uuid NOT NULL CONSTRAINT password_reset_tokens_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
      expires_at timestamptz NOT NULL
    )`);
    await queryRunner.query('CREATE INDEX password_reset_tokens_user_idx ON password_reset_tokens (user_id)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE password_reset_tokens');
  }
}
