import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a module lets other modules' statements read of its tables, where a statement must stay one
 * statement (dashboard lists, visibility joins, audit and event pages, locks within a transaction):
 * views and functions, each named by its owner's src/modules/<owner>/sql-api.ts. Plain views and
 * `LANGUAGE sql` functions of one SELECT, so PostgreSQL inlines them into the calling statement
 * and plans it as before (indexes of the tables underneath included).
 *
 * - devices: device_owners, device_summaries, device_online (the one "online" rule in SQL).
 * - accounts: account_summaries.
 * - sharing: shared_with (the active shares of an account), and the one visibility rule as
 *   visible_devices (any viewer) and customer_devices (a customer's list).
 */
export class TableOwnerFunctions1764001300000 implements MigrationInterface {
  name = 'TableOwnerFunctions1764001300000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE VIEW device_owners AS SELECT device_id, owner_id, visible_since FROM devices');
    await queryRunner.query(`
      CREATE VIEW device_summaries AS
        SELECT device_id, hardware_id, firmware_version, owner_id, claimed_at, last_seen_at, last_telemetry_at, visible_since,
               config_overrides, config_revision, applied_config_version, config_applied_at, name, tags
          FROM devices`);
    // Online: telemetry within three of the device's telemetry intervals (devices/domain/device-online.ts).
    await queryRunner.query(`
      CREATE FUNCTION device_online(p_last_telemetry_at timestamptz, p_interval_sec integer, p_now timestamptz) RETURNS boolean
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$ SELECT p_last_telemetry_at IS NOT NULL AND p_last_telemetry_at >= p_now - make_interval(secs => 3 * p_interval_sec) $$`);
    await queryRunner.query(`
      CREATE VIEW account_summaries AS
        SELECT id AS user_id, email, email_verified_at IS NOT NULL AS email_verified, role FROM users`);
    // A share counts while it is bound to an account and was granted by the device's current owner.
    await queryRunner.query(`
      CREATE FUNCTION shared_with(p_user uuid) RETURNS TABLE (device_id varchar, owner_id uuid, role varchar, visible_since timestamptz)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT s.device_id, s.granted_by, s.role, d.visible_since
            FROM device_shares s JOIN device_owners d ON d.device_id = s.device_id AND d.owner_id = s.granted_by
           WHERE s.user_id = p_user
        $$`);
    // The devices a viewer sees, with their role and where their view of its history starts
    // (sees_from): an administrator every device and all of its history, an owner and the holders
    // of their active shares from visible_since on. One SELECT over devices, so a caller's
    // `WHERE device_id = …` or join reads devices by its primary key.
    await queryRunner.query(`
      CREATE FUNCTION visible_devices(p_is_admin boolean, p_user uuid)
        RETURNS TABLE (device_id varchar, role text, owner_id uuid, visible_since timestamptz, sees_from timestamptz)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT d.device_id,
                 CASE WHEN d.owner_id = p_user THEN 'owner' WHEN p_is_admin THEN 'admin'
                      ELSE (SELECT s.role FROM device_shares s WHERE s.device_id = d.device_id AND s.user_id = p_user AND s.granted_by = d.owner_id) END,
                 d.owner_id, d.visible_since,
                 CASE WHEN p_is_admin THEN '-infinity' ELSE COALESCE(d.visible_since, '-infinity') END
            FROM device_owners d
           WHERE p_is_admin OR d.owner_id = p_user OR d.device_id = ANY(ARRAY(SELECT s.device_id FROM shared_with(p_user) s))
        $$`);
    // The same rule for a customer (not an administrator), as a row source for their list: their own
    // devices by the owner index, then those shared with them by the primary key. The filter of
    // visible_devices leaves the planner free to walk the whole primary key in the list's order.
    await queryRunner.query(`
      CREATE FUNCTION customer_devices(p_user uuid)
        RETURNS TABLE (device_id varchar, role text, owner_id uuid, visible_since timestamptz, sees_from timestamptz)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT d.device_id, 'owner', d.owner_id, d.visible_since, COALESCE(d.visible_since, '-infinity')
            FROM device_owners d WHERE d.owner_id = p_user
          UNION ALL
          SELECT s.device_id, s.role::text, s.owner_id, s.visible_since, COALESCE(s.visible_since, '-infinity')
            FROM shared_with(p_user) s WHERE s.owner_id <> p_user
        $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION customer_devices(uuid)');
    await queryRunner.query('DROP FUNCTION visible_devices(boolean, uuid)');
    await queryRunner.query('DROP FUNCTION shared_with(uuid)');
    await queryRunner.query('DROP VIEW account_summaries');
    await queryRunner.query('DROP FUNCTION device_online(timestamptz, integer, timestamptz)');
    await queryRunner.query('DROP VIEW device_summaries');
    await queryRunner.query('DROP VIEW device_owners');
  }
}
