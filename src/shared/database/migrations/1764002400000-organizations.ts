import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Organizations (the organizations module): fleets owned by companies and households, and their
 * members by e-mail address with a role. Every account gets its personal organization, whose id is
 * the account's, with the account as its owner, and which goes with the account's row.
 *
 * Devices now belong to organizations: `devices.owner_id` references organizations instead of
 * users. Every owner's devices stay where they were (the personal organization has the owner's
 * id), and the one visibility rule (the sharing module's functions) gains membership: a member
 * sees the organization's devices, owners and admins as owners, operators as installers, viewers
 * as viewers.
 */
export class Organizations1764002400000 implements MigrationInterface {
  name = 'Organizations1764002400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE organizations (
        organization_id uuid NOT NULL CONSTRAINT organizations_pkey PRIMARY KEY,
        name varchar(100) NOT NULL,
        personal_of uuid NULL CONSTRAINT organizations_personal_of_key UNIQUE CONSTRAINT organizations_personal_of_fkey REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE organization_members (
        member_id uuid NOT NULL CONSTRAINT organization_members_pkey PRIMARY KEY,
        organization_id uuid NOT NULL CONSTRAINT organization_members_organization_id_fkey REFERENCES organizations (organization_id) ON DELETE CASCADE,
        email varchar(254) NOT NULL,
        user_id uuid NULL CONSTRAINT organization_members_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
        role varchar(8) NOT NULL CONSTRAINT organization_members_role_check CHECK (role IN ('owner', 'admin', 'operator', 'viewer')),
        invited_at timestamptz NOT NULL
      )`);
    await queryRunner.query('CREATE UNIQUE INDEX organization_members_organization_id_email_key ON organization_members (organization_id, email)');
    await queryRunner.query('CREATE INDEX organization_members_organization_invited_idx ON organization_members (organization_id, invited_at, member_id)');
    await queryRunner.query('CREATE INDEX organization_members_user_idx ON organization_members (user_id, organization_id) WHERE user_id IS NOT NULL');
    await queryRunner.query('CREATE INDEX organization_members_pending_idx ON organization_members (email) WHERE user_id IS NULL');
    await queryRunner.query(`INSERT INTO organizations (organization_id, name, personal_of, created_at, updated_at) SELECT id, 'Personal', id, created_at, created_at FROM users`);
    await queryRunner.query(`
      INSERT INTO organization_members (member_id, organization_id, email, user_id, role, invited_at)
        SELECT gen_random_uuid(), id, email, id, 'owner', created_at FROM users`);
    await queryRunner.query('ALTER TABLE devices DROP CONSTRAINT devices_owner_fk');
    await queryRunner.query('ALTER TABLE devices ADD CONSTRAINT devices_owner_fk FOREIGN KEY (owner_id) REFERENCES organizations (organization_id)');
    // An organization's devices in the list's order: its first page is read from the index, not sorted from all of them.
    await queryRunner.query('DROP INDEX devices_owner_idx');
    await queryRunner.query('CREATE INDEX devices_owner_idx ON devices (owner_id, device_id) WHERE owner_id IS NOT NULL');
    // The organizations module's SQL surface (organizations/sql-api.ts): an account's bound
    // memberships, and an organization's bound accounts.
    await queryRunner.query(`
      CREATE FUNCTION member_organizations(p_user uuid) RETURNS TABLE (organization_id uuid, role varchar)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$ SELECT m.organization_id, m.role FROM organization_members m WHERE m.user_id = p_user $$`);
    await queryRunner.query(`
      CREATE FUNCTION organization_accounts(p_organization uuid) RETURNS TABLE (user_id uuid)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$ SELECT m.user_id FROM organization_members m WHERE m.organization_id = p_organization AND m.user_id IS NOT NULL $$`);
    // A device may be shared with an organization (an installer company) instead of an address.
    await queryRunner.query(`
      ALTER TABLE device_shares
        ALTER COLUMN email DROP NOT NULL,
        ADD COLUMN organization_id uuid NULL CONSTRAINT device_shares_organization_id_fkey REFERENCES organizations (organization_id) ON DELETE CASCADE,
        ADD CONSTRAINT device_shares_recipient_check CHECK ((email IS NULL) <> (organization_id IS NULL))`);
    await queryRunner.query('CREATE UNIQUE INDEX device_shares_device_id_organization_id_key ON device_shares (device_id, organization_id)');
    await queryRunner.query('CREATE INDEX device_shares_organization_idx ON device_shares (organization_id) WHERE organization_id IS NOT NULL');
    await this.visibility(queryRunner, true);
    // The sharing module's rule for one organization's devices (the list's organization filter):
    // all of them for its members, by their role; nothing for anyone else. The membership is read
    // once, so the devices come from the owner index in the list's order.
    await queryRunner.query(`
      CREATE FUNCTION organization_devices(p_user uuid, p_organization uuid)
        RETURNS TABLE (device_id varchar, role text, owner_id uuid, visible_since timestamptz, sees_from timestamptz)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT d.device_id, r.role, d.owner_id, d.visible_since, COALESCE(d.visible_since, '-infinity')
            FROM (SELECT (SELECT CASE m.role WHEN 'owner' THEN 'owner' WHEN 'admin' THEN 'owner' WHEN 'operator' THEN 'installer' ELSE 'viewer' END
                            FROM member_organizations(p_user) m WHERE m.organization_id = p_organization) AS role) r
            JOIN device_owners d ON d.owner_id = p_organization
           WHERE r.role IS NOT NULL
        $$`);
  }

  /**
   * The sharing module's rule (TableOwnerFunctions), with membership (\`withMembers\`) or without:
   * a device is seen by an administrator, by its owner organization's members (the account of a
   * personal organization is its member too) and by the holders of its active shares.
   */
  private async visibility(queryRunner: QueryRunner, withMembers: boolean): Promise<void> {
    // The active shares an account holds: its own (by address), and with members, those of its
    // organizations, each member's capped by their role (an organization's viewer views); the
    // stronger one when a device comes both ways ('installer' sorts before 'viewer').
    await queryRunner.query(
      withMembers
        ? `
      CREATE OR REPLACE FUNCTION shared_with(p_user uuid) RETURNS TABLE (device_id varchar, owner_id uuid, role varchar, visible_since timestamptz)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT DISTINCT ON (x.device_id) x.device_id, x.owner_id, x.role, x.visible_since
            FROM (SELECT s.device_id, s.granted_by AS owner_id, s.role, d.visible_since
                    FROM device_shares s JOIN device_owners d ON d.device_id = s.device_id AND d.owner_id = s.granted_by
                   WHERE s.user_id = p_user
                  UNION ALL
                  SELECT s.device_id, s.granted_by, (CASE WHEN m.role = 'viewer' THEN 'viewer' ELSE s.role END)::varchar, d.visible_since
                    FROM member_organizations(p_user) m
                    JOIN device_shares s ON s.organization_id = m.organization_id
                    JOIN device_owners d ON d.device_id = s.device_id AND d.owner_id = s.granted_by) x
           ORDER BY x.device_id, x.role
        $$`
        : `
      CREATE OR REPLACE FUNCTION shared_with(p_user uuid) RETURNS TABLE (device_id varchar, owner_id uuid, role varchar, visible_since timestamptz)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT s.device_id, s.granted_by, s.role, d.visible_since
            FROM device_shares s JOIN device_owners d ON d.device_id = s.device_id AND d.owner_id = s.granted_by
           WHERE s.user_id = p_user
        $$`,
    );
    // What a member is to the organization's devices: owners and admins own them, operators install, viewers view.
    const memberRole = withMembers
      ? `(SELECT CASE m.role WHEN 'owner' THEN 'owner' WHEN 'admin' THEN 'owner' WHEN 'operator' THEN 'installer' ELSE 'viewer' END
            FROM member_organizations(p_user) m WHERE m.organization_id = d.owner_id)`
      : 'NULL';
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION visible_devices(p_is_admin boolean, p_user uuid)
        RETURNS TABLE (device_id varchar, role text, owner_id uuid, visible_since timestamptz, sees_from timestamptz)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT d.device_id,
                 CASE WHEN d.owner_id = p_user THEN 'owner' WHEN p_is_admin THEN 'admin'
                      ELSE COALESCE(${memberRole},
                                    ${withMembers ? '(SELECT s.role FROM shared_with(p_user) s WHERE s.device_id = d.device_id)' : '(SELECT s.role FROM device_shares s WHERE s.device_id = d.device_id AND s.user_id = p_user AND s.granted_by = d.owner_id)'}) END,
                 d.owner_id, d.visible_since,
                 CASE WHEN p_is_admin THEN '-infinity' ELSE COALESCE(d.visible_since, '-infinity') END
            FROM device_owners d
           WHERE p_is_admin OR d.owner_id = p_user
              ${withMembers ? 'OR d.owner_id = ANY(ARRAY(SELECT m.organization_id FROM member_organizations(p_user) m))' : ''}
              OR d.device_id = ANY(ARRAY(SELECT s.device_id FROM shared_with(p_user) s))
        $$`);
    // A customer's list: their personal organization's devices by the owner index, then those of
    // the other organizations they are a member of, then those shared with them (and not theirs
    // already as a member) by the primary key.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION customer_devices(p_user uuid)
        RETURNS TABLE (device_id varchar, role text, owner_id uuid, visible_since timestamptz, sees_from timestamptz)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT d.device_id, 'owner', d.owner_id, d.visible_since, COALESCE(d.visible_since, '-infinity')
            FROM device_owners d WHERE d.owner_id = p_user
          ${
            withMembers
              ? `UNION ALL
          SELECT d.device_id, CASE m.role WHEN 'owner' THEN 'owner' WHEN 'admin' THEN 'owner' WHEN 'operator' THEN 'installer' ELSE 'viewer' END,
                 d.owner_id, d.visible_since, COALESCE(d.visible_since, '-infinity')
            FROM member_organizations(p_user) m JOIN device_owners d ON d.owner_id = m.organization_id
           WHERE m.organization_id <> p_user`
              : ''
          }
          UNION ALL
          SELECT s.device_id, s.role::text, s.owner_id, s.visible_since, COALESCE(s.visible_since, '-infinity')
            FROM shared_with(p_user) s WHERE s.owner_id <> p_user
            ${withMembers ? 'AND NOT EXISTS (SELECT 1 FROM member_organizations(p_user) m WHERE m.organization_id = s.owner_id)' : ''}
        $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION organization_devices(uuid, uuid)');
    await queryRunner.query('DELETE FROM device_shares WHERE organization_id IS NOT NULL');
    await queryRunner.query('DROP INDEX device_shares_organization_idx');
    await queryRunner.query('DROP INDEX device_shares_device_id_organization_id_key');
    await queryRunner.query(
      'ALTER TABLE device_shares DROP CONSTRAINT device_shares_recipient_check, DROP COLUMN organization_id, ALTER COLUMN email SET NOT NULL',
    );
    await queryRunner.query('DROP INDEX devices_owner_idx');
    await queryRunner.query('CREATE INDEX devices_owner_idx ON devices (owner_id) WHERE owner_id IS NOT NULL');
    await this.visibility(queryRunner, false);
    await queryRunner.query('DROP FUNCTION organization_accounts(uuid)');
    await queryRunner.query('DROP FUNCTION member_organizations(uuid)');
    await queryRunner.query('ALTER TABLE devices DROP CONSTRAINT devices_owner_fk');
    await queryRunner.query('ALTER TABLE devices ADD CONSTRAINT devices_owner_fk FOREIGN KEY (owner_id) REFERENCES users (id)');
    await queryRunner.query('DROP TABLE organization_members');
    await queryRunner.query('DROP TABLE organizations');
  }
}
