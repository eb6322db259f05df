import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Organizations (the organizations module): fleets owned by companies and households, and their
 * members by e-mail address with a role. Every account gets its personal organization, whose id is
 * the account's, with the account as its owner; nothing else changes for it.
 */
export class Organizations1764002400000 implements MigrationInterface {
  name = 'Organizations1764002400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE organizations (
        organization_id uuid NOT NULL CONSTRAINT organizations_pkey PRIMARY KEY,
        name varchar(100) NOT NULL,
        personal boolean NOT NULL,
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
    await queryRunner.query(`INSERT INTO organizations (organization_id, name, personal, created_at, updated_at) SELECT id, 'Personal', true, created_at, created_at FROM users`);
    await queryRunner.query(`
      INSERT INTO organization_members (member_id, organization_id, email, user_id, role, invited_at)
        SELECT gen_random_uuid(), id, email, id, 'owner', created_at FROM users`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE organization_members');
    await queryRunner.query('DROP TABLE organizations');
  }
}
