import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event log: what happened to a device, for the dashboard, the stream and webhooks.
 * Devices learn when telemetry last came and since when they are offline (device.offline/online).
 */
export class DeviceEvents1764000000000 implements MigrationInterface {
  name = 'DeviceEvents1764000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE device_events (
      id bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT device_events_pkey PRIMARY KEY,
      type varchar(32) NOT NULL,
      device_id varchar(64) NOT NULL CONSTRAINT device_events_device_id_fkey REFERENCES devices (device_id) ON DELETE CASCADE,
      owner_id uuid,
      occurred_at timestamptz NOT NULL,
      data jsonb NOT NULL
    )`);
    await queryRunner.query('CREATE INDEX device_events_device_idx ON device_events (device_id, id)');
    await queryRunner.query('ALTER TABLE devices ADD COLUMN last_telemetry_at timestamptz, ADD COLUMN offline_since timestamptz');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE devices DROP COLUMN offline_since, DROP COLUMN last_telemetry_at');
    await queryRunner.query('DROP TABLE device_events');
  }
}
