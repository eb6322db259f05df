import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Alert rules (per device, and the fleet defaults), the state of series in progress and the alerts.
 * Rule changes are announced on the change channel like the configuration's, so every
 * instance's rule cache hears of them.
 */
export class Alerts1764000100000 implements MigrationInterface {
  name = 'Alerts1764000100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE alert_rules (
      device_id varchar(64) NOT NULL CONSTRAINT alert_rules_pkey PRIMARY KEY CONSTRAINT alert_rules_device_id_fkey REFERENCES devices (device_id) ON DELETE CASCADE,
      rules jsonb NOT NULL,
      updated_at timestamptz NOT NULL
    )`);
    await queryRunner.query(`CREATE TABLE alert_rule_defaults (
      id smallint NOT NULL CONSTRAINT alert_rule_defaults_pkey PRIMARY KEY,
      rules jsonb NOT NULL,
      updated_at timestamptz NOT NULL
    )`);
    await queryRunner.query(`CREATE TABLE alert_series (
      device_id varchar(64) NOT NULL CONSTRAINT alert_series_device_id_fkey REFERENCES devices (device_id) ON DELETE CASCADE,
      battery_id varchar(64) NOT NULL,
      rule_id varchar(64) NOT NULL,
      watermark timestamptz,
      breaching_since timestamptz,
      open_alert_id uuid,
      CONSTRAINT alert_series_pkey PRIMARY KEY (device_id, battery_id, rule_id)
    )`);
    await queryRunner.query(`CREATE TABLE alerts (
      alert_id uuid NOT NULL CONSTRAINT alerts_pkey PRIMARY KEY,
      device_id varchar(64) NOT NULL CONSTRAINT alerts_device_id_fkey REFERENCES devices (device_id) ON DELETE CASCADE,
      battery_id varchar(64) NOT NULL,
      rule_id varchar(64) NOT NULL,
      metric varchar(64) NOT NULL,
      op varchar(8) NOT NULL,
      threshold float8 NOT NULL,
      clear_at float8 NOT NULL,
      value float8 NOT NULL,
      state varchar(16) NOT NULL,
      opened_at timestamptz NOT NULL,
      acknowledged_at timestamptz,
      acknowledged_by uuid,
      resolved_at timestamptz,
      resolved_value float8
    )`);
    await queryRunner.query('CREATE INDEX alerts_device_idx ON alerts (device_id, opened_at, alert_id)');
    await queryRunner.query('ALTER TABLE users ADD COLUMN alert_emails boolean NOT NULL DEFAULT true');
    await queryRunner.query('CREATE TRIGGER alert_rules_announce_change AFTER INSERT OR UPDATE OR DELETE ON alert_rules FOR EACH STATEMENT EXECUTE FUNCTION announce_change()');
    await queryRunner.query('CREATE TRIGGER alert_rule_defaults_announce_change AFTER INSERT OR UPDATE OR DELETE ON alert_rule_defaults FOR EACH STATEMENT EXECUTE FUNCTION announce_change()');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE users DROP COLUMN alert_emails');
    await queryRunner.query('DROP TABLE alerts');
    await queryRunner.query('DROP TABLE alert_series');
    await queryRunner.query('DROP TABLE alert_rule_defaults');
    await queryRunner.query('DROP TABLE alert_rules');
  }
}
