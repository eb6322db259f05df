import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The customer guard keeps accounts in their sessions in memory (CustomerSessions). These triggers
 * name the account on the change channel whenever what the guard reads of it changes, on whichever
 * instance: its role, verification or token version, the account's deletion, and the end of a
 * session's live refresh token (revoked or deleted). Rotation leaves revoked_at alone: a session
 * stays live through it, and nothing is said.
 */
export class CustomerSessionCache1764000400000 implements MigrationInterface {
  name = 'CustomerSessionCache1764000400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION announce_user_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_TABLE_NAME = 'users' THEN
          PERFORM pg_notify('device_cloud_changes', 'user:' || COALESCE(NEW.id, OLD.id));
        ELSE
          PERFORM pg_notify('device_cloud_changes', 'user:' || COALESCE(NEW.user_id, OLD.user_id));
        END IF;
        RETURN NULL;
      END
      $$`);
    await queryRunner.query(`
      CREATE TRIGGER users_announce_change AFTER UPDATE ON users FOR EACH ROW
      WHEN ((OLD.role, OLD.email_verified_at, OLD.token_version) IS DISTINCT FROM (NEW.role, NEW.email_verified_at, NEW.token_version))
      EXECUTE FUNCTION announce_user_change()`);
    await queryRunner.query('CREATE TRIGGER users_announce_delete AFTER DELETE ON users FOR EACH ROW EXECUTE FUNCTION announce_user_change()');
    await queryRunner.query(`
      CREATE TRIGGER user_refresh_tokens_announce_revoke AFTER UPDATE OF revoked_at ON user_refresh_tokens FOR EACH ROW
      WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
      EXECUTE FUNCTION announce_user_change()`);
    await queryRunner.query(`
      CREATE TRIGGER user_refresh_tokens_announce_delete AFTER DELETE ON user_refresh_tokens FOR EACH ROW
      WHEN (OLD.revoked_at IS NULL)
      EXECUTE FUNCTION announce_user_change()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER user_refresh_tokens_announce_delete ON user_refresh_tokens');
    await queryRunner.query('DROP TRIGGER user_refresh_tokens_announce_revoke ON user_refresh_tokens');
    await queryRunner.query('DROP TRIGGER users_announce_delete ON users');
    await queryRunner.query('DROP TRIGGER users_announce_change ON users');
    await queryRunner.query('DROP FUNCTION announce_user_change()');
  }
}
