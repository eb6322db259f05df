import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Integrations that belong to an organization rather than to one of its members, and each member's
 * alert e-mail preference for the organization (`organization_members.alert_emails`). API keys and
 * webhooks may be an organization's (`organization_id`) instead of an account's (`user_id`), and
 * stay when the member who made them leaves. An organization's key acts as the organization: the
 * organizations module's `member_organizations` answers an organization as an admin of itself, so
 * the one visibility rule gives its keys its devices and the shares it holds, by an admin's role,
 * and nothing else. The audit log names such a key's actor kind `organization`, and is read per
 * organization by `owner_id` (an organization's own entries carry its id there too).
 */
export class OrganizationIntegrations1764002600000 implements MigrationInterface {
  name = 'OrganizationIntegrations1764002600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['api_keys', 'webhooks']) {
      await queryRunner.query(`
        ALTER TABLE ${table}
          ALTER COLUMN user_id DROP NOT NULL,
          ADD COLUMN organization_id uuid NULL CONSTRAINT ${table}_organization_id_fkey REFERENCES organizations (organization_id) ON DELETE CASCADE,
          ADD CONSTRAINT ${table}_holder_check CHECK ((user_id IS NULL) <> (organization_id IS NULL))`);
    }
    await queryRunner.query('CREATE INDEX api_keys_organization_idx ON api_keys (organization_id, created_at, key_id) WHERE organization_id IS NOT NULL');
    await queryRunner.query('CREATE INDEX webhooks_organization_idx ON webhooks (organization_id) WHERE organization_id IS NOT NULL');
    await queryRunner.query('ALTER TABLE audit_log ALTER COLUMN actor_kind TYPE varchar(12), DROP CONSTRAINT audit_log_actor_kind_check');
    await queryRunner.query("ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_kind_check CHECK (actor_kind IN ('user', 'admin', 'system', 'device', 'organization'))");
    // An organization's log: the entries of its devices while it owned them, and of the organization itself.
    await queryRunner.query('CREATE INDEX audit_log_owner_idx ON audit_log (owner_id, id) WHERE owner_id IS NOT NULL');
    // Each member's own choice of alert e-mails about the organization's devices.
    await queryRunner.query('ALTER TABLE organization_members ADD COLUMN alert_emails boolean NOT NULL DEFAULT true');
    await this.memberOrganizations(queryRunner, true);
  }

  /** With `itself`, an organization (never a personal one, whose id is its account's) is an admin of itself. */
  private async memberOrganizations(queryRunner: QueryRunner, itself: boolean): Promise<void> {
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION member_organizations(p_user uuid) RETURNS TABLE (organization_id uuid, role varchar)
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $$
          SELECT m.organization_id, m.role FROM organization_members m WHERE m.user_id = p_user
          ${itself ? "UNION ALL SELECT o.organization_id, 'admin'::varchar FROM organizations o WHERE o.organization_id = p_user AND o.personal_of IS NULL" : ''}
        $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await this.memberOrganizations(queryRunner, false);
    await queryRunner.query('ALTER TABLE organization_members DROP COLUMN alert_emails');
    await queryRunner.query('DROP INDEX audit_log_owner_idx');
    await queryRunner.query("DELETE FROM audit_log WHERE actor_kind = 'organization'");
    await queryRunner.query('ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_kind_check');
    await queryRunner.query("ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_kind_check CHECK (actor_kind IN ('user', 'admin', 'system', 'device'))");
    await queryRunner.query('ALTER TABLE audit_log ALTER COLUMN actor_kind TYPE varchar(8)');
    for (const table of ['api_keys', 'webhooks']) {
      await queryRunner.query(`DELETE FROM ${table} WHERE organization_id IS NOT NULL`);
      await queryRunner.query(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_holder_check, DROP COLUMN organization_id, ALTER COLUMN user_id SET NOT NULL`);
    }
  }
}
