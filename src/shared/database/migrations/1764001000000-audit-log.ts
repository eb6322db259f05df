import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log: who changed what, when and from where. No foreign keys: the log must
 * outlive the accounts and keys it names. Successful claims, releases and re-registration windows
 * already recorded in claim_audit are copied in, so the log starts with the ownership history the
 * service has; claim_audit stays as the record of every attempt, failed ones included.
 * devices.decommissioned_at: a decommissioned device's credentials are void and it may not
 * register until an administrator re-opens it.
 */
export class AuditLog1764001000000 implements MigrationInterface {
  name = 'AuditLog1764001000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE audit_log (
        id bigserial CONSTRAINT audit_log_pkey PRIMARY KEY,
        at timestamptz NOT NULL,
        actor_kind varchar(8) NOT NULL CONSTRAINT audit_log_actor_kind_check CHECK (actor_kind IN ('user', 'admin', 'system', 'device')),
        actor_user_id uuid NULL,
        actor_api_key_id uuid NULL,
        action varchar(48) NOT NULL,
        device_id varchar(64) NULL,
        owner_id uuid NULL,
        target varchar(200) NOT NULL,
        client_address varchar(64) NULL,
        detail jsonb NOT NULL DEFAULT '{}'
      )`);
    await queryRunner.query('CREATE INDEX audit_log_device_idx ON audit_log (device_id, id)');
    await queryRunner.query('CREATE INDEX audit_log_actor_idx ON audit_log (actor_user_id, id)');
    await queryRunner.query('CREATE INDEX audit_log_at_idx ON audit_log (at)');
    // The owner of a claim is its claimer; of a release, the one who released; of a window an owner
    // opened, that owner (claim_audit.user_id); an administrator's window belongs to nobody's in particular.
    await queryRunner.query(`
      INSERT INTO audit_log (at, actor_kind, actor_user_id, action, device_id, owner_id, target, client_address, detail)
      SELECT c.at, CASE WHEN u.role = 'admin' THEN 'admin' ELSE 'user' END, c.user_id,
             CASE c.outcome WHEN 'CLAIMED' THEN 'device.claimed' WHEN 'RELEASED' THEN 'device.released' ELSE 'device.re_registration_opened' END,
             c.device_id,
             CASE WHEN c.outcome = 'RE_REGISTRATION_OPENED' AND u.role = 'admin' THEN NULL ELSE c.user_id END,
             'device:' || c.device_id, c.client_address, '{"source": "claim_audit"}'::jsonb
        FROM claim_audit c LEFT JOIN users u ON u.id = c.user_id
       WHERE c.outcome IN ('CLAIMED', 'RELEASED', 'RE_REGISTRATION_OPENED')
       ORDER BY c.id`);
    await queryRunner.query('ALTER TABLE devices ADD COLUMN decommissioned_at timestamptz NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE devices DROP COLUMN decommissioned_at');
    await queryRunner.query('DROP TABLE audit_log');
  }
}
