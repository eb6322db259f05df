import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Commands to gateways (the commands module): sent from the dashboard, fetched by the gateway's
 * poll, answered with a result. A change of a device's commands is announced on the change feed as
 * `device_command:<device id>`, so every instance's poll cache forgets that device and a long poll
 * held on any instance wakes up.
 */
export class DeviceCommands1764001500000 implements MigrationInterface {
  name = 'DeviceCommands1764001500000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE device_commands (
        command_id bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT device_commands_pkey PRIMARY KEY,
        device_id varchar(64) NOT NULL CONSTRAINT device_commands_device_id_fkey REFERENCES devices (device_id) ON DELETE CASCADE,
        type varchar(16) NOT NULL,
        params jsonb NOT NULL,
        state varchar(10) NOT NULL CONSTRAINT device_commands_state_check CHECK (state IN ('queued', 'delivered', 'succeeded', 'failed', 'rejected', 'expired', 'cancelled')),
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        delivered_at timestamptz NULL,
        deliveries integer NOT NULL DEFAULT 0,
        accepted_at timestamptz NULL,
        finished_at timestamptz NULL,
        output text NULL
      )`);
    await queryRunner.query('CREATE INDEX device_commands_device_idx ON device_commands (device_id, command_id)');
    await queryRunner.query(`CREATE INDEX device_commands_pending_idx ON device_commands (device_id, command_id) WHERE state IN ('queued', 'delivered')`);
    await queryRunner.query(`
      CREATE FUNCTION announce_command_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('device_cloud_changes', 'device_command:' || COALESCE(NEW.device_id, OLD.device_id));
        RETURN NULL;
      END
      $$`);
    await queryRunner.query('CREATE TRIGGER device_commands_announce_change AFTER INSERT OR UPDATE OR DELETE ON device_commands FOR EACH ROW EXECUTE FUNCTION announce_command_change()');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER device_commands_announce_change ON device_commands');
    await queryRunner.query('DROP FUNCTION announce_command_change()');
    await queryRunner.query('DROP TABLE device_commands');
  }
}
