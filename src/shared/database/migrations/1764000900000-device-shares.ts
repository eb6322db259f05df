import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Device sharing: an owner shares a device with an e-mail address as viewer or
 * installer. user_id is null until an account with that address is verified. A share counts only
 * while granted_by is still the device's owner (see src/modules/sharing/infrastructure/visibility-sql.ts),
 * so any change of owner ends it. Read by the sharee's id (device_shares_user_idx, the visibility
 * rule's subquery), bound by address (device_shares_pending_idx) and removed by granter
 * (device_shares_granted_by_idx, account deletion).
 */
export class DeviceShares1764000900000 implements MigrationInterface {
  name = 'DeviceShares1764000900000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE device_shares (
      share_id uuid NOT NULL CONSTRAINT device_shares_pkey PRIMARY KEY,
      device_id varchar(64) NOT NULL CONSTRAINT device_shares_device_id_fkey REFERENCES devices (device_id) ON DELETE CASCADE,
      granted_by uuid NOT NULL CONSTRAINT device_shares_granted_by_fkey REFERENCES users (id) ON DELETE CASCADE,
      email varchar(254) NOT NULL,
      user_id uuid NULL CONSTRAINT device_shares_user_id_fkey REFERENCES users (id) ON DELETE CASCADE,
      role varchar(9) NOT NULL CONSTRAINT device_shares_role_check CHECK (role IN ('viewer', 'installer')),
      created_at timestamptz NOT NULL
    )`);
    await queryRunner.query('CREATE UNIQUE INDEX device_shares_device_id_email_key ON device_shares (device_id, email)');
    await queryRunner.query('CREATE INDEX device_shares_user_idx ON device_shares (user_id, device_id) WHERE user_id IS NOT NULL');
    await queryRunner.query('CREATE INDEX device_shares_pending_idx ON device_shares (email) WHERE user_id IS NULL');
    await queryRunner.query('CREATE INDEX device_shares_granted_by_idx ON device_shares (granted_by)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE device_shares');
  }
}
