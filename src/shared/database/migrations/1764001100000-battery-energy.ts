import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Battery intelligence. `battery_profiles`: what the owner says a battery is.
 * `battery_energy_1h`: charge and energy per battery and UTC hour, recomputed from the hour's
 * records (and their neighbours up to 15 minutes outside it) whenever a record lands that touches
 * it; `battery_energy_stale` lists the hours waiting for that, written by the ingest statement in
 * the same transaction as the records, so a crash loses no recomputation. Like the rollups, no
 * foreign key to devices: rows are keyed as telemetry is, and go with it.
 */
export class BatteryEnergy1764001100000 implements MigrationInterface {
  name = 'BatteryEnergy1764001100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE battery_profiles (
        device_id varchar(64) NOT NULL REFERENCES devices (device_id) ON DELETE CASCADE,
        battery_id varchar(64) NOT NULL,
        name varchar(64) NOT NULL,
        chemistry varchar(16) NOT NULL CONSTRAINT battery_profiles_chemistry_check CHECK (chemistry IN ('lfp', 'nmc', 'lead-acid', 'agm', 'gel', 'other')),
        nominal_voltage double precision NOT NULL,
        capacity_ah double precision NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (device_id, battery_id)
      )`);
    await queryRunner.query(`
      CREATE TABLE battery_energy_1h (
        device_id varchar(64) NOT NULL,
        battery_id varchar(64) NOT NULL,
        bucket timestamptz NOT NULL,
        charged_ah double precision NOT NULL,
        discharged_ah double precision NOT NULL,
        charged_wh double precision NOT NULL,
        discharged_wh double precision NOT NULL,
        covered_ms integer NOT NULL,
        PRIMARY KEY (device_id, battery_id, bucket)
      )`);
    // Retention deletes by bucket (TelemetryPartitions, with the rollups).
    await queryRunner.query('CREATE INDEX battery_energy_1h_bucket_idx ON battery_energy_1h (bucket)');
    await queryRunner.query(`
      CREATE TABLE battery_energy_stale (
        device_id varchar(64) NOT NULL,
        battery_id varchar(64) NOT NULL,
        bucket timestamptz NOT NULL,
        PRIMARY KEY (device_id, battery_id, bucket)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE battery_energy_stale');
    await queryRunner.query('DROP TABLE battery_energy_1h');
    await queryRunner.query('DROP TABLE battery_profiles');
  }
}
