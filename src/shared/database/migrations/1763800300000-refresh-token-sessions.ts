import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Refresh-token families: a login opens a session, and every rotation's successor stays in it.
 * Logout revokes the family, and a customer access token names its session (`sid`), so the guard
 * refuses it as soon as the family has no live token. Tokens issued before this migration each
 * start a family of their own (family_id = id) and keep working.
 */
export class RefreshTokenSessions1763800300000 implements MigrationInterface {
  name = 'RefreshTokenSessions1763800300000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['device_refresh_tokens', 'user_refresh_tokens']) {
      await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN family_id uuid`);
      await queryRunner.query(`UPDATE ${table} SET family_id = id`);
      await queryRunner.query(`ALTER TABLE ${table} ALTER COLUMN family_id SET NOT NULL`);
    }
    // The customer guard asks, on every request, whether the token's session still has a live token.
    await queryRunner.query('CREATE INDEX user_refresh_tokens_live_family_idx ON user_refresh_tokens (family_id) WHERE revoked_at IS NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX user_refresh_tokens_live_family_idx');
    await queryRunner.query('ALTER TABLE user_refresh_tokens DROP COLUMN family_id');
    await queryRunner.query('ALTER TABLE device_refresh_tokens DROP COLUMN family_id');
  }
}
