import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/** What the owner (or an installer) says one battery of a device is (migration BatteryEnergy1764001100000). */
@Entity({ name: 'battery_profiles' })
@Check('battery_profiles_chemistry_check', "chemistry IN ('lfp', 'nmc', 'lead-acid', 'agm', 'gel', 'other')")
export class BatteryProfileRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'battery_profiles_pkey' })
  @ForeignKey('devices', { name: 'battery_profiles_device_id_fkey', onDelete: 'CASCADE' })
  deviceId!: string;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'battery_profiles_pkey' })
  batteryId!: string;

  @Column({ type: 'varchar', length: 64 })
  name!: string;

  /** One of CHEMISTRIES. */
  @Column({ type: 'varchar', length: 16 })
  chemistry!: string;

  @Column({ name: 'nominal_voltage', type: 'double precision' })
  nominalVoltage!: number;

  @Column({ name: 'capacity_ah', type: 'double precision' })
  capacityAh!: number;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** Charge and energy of one battery in one UTC hour, recomputed from the hour's records (BatteryEnergyStore). */
@Entity({ name: 'battery_energy_1h' })
@Index('battery_energy_1h_bucket_idx', ['bucket'])
export class BatteryEnergyHourRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'battery_energy_1h_pkey' })
  deviceId!: string;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'battery_energy_1h_pkey' })
  batteryId!: string;

  @PrimaryColumn({ type: 'timestamptz', primaryKeyConstraintName: 'battery_energy_1h_pkey' })
  bucket!: Date;

  @Column({ name: 'charged_ah', type: 'double precision' })
  chargedAh!: number;

  @Column({ name: 'discharged_ah', type: 'double precision' })
  dischargedAh!: number;

  @Column({ name: 'charged_wh', type: 'double precision' })
  chargedWh!: number;

  @Column({ name: 'discharged_wh', type: 'double precision' })
  dischargedWh!: number;

  @Column({ name: 'covered_ms', type: 'integer' })
  coveredMs!: number;
}

/** An hour whose records changed since its energy was computed: the ingest statement adds it, the recomputation takes it. */
@Entity({ name: 'battery_energy_stale' })
export class BatteryEnergyStaleRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'battery_energy_stale_pkey' })
  deviceId!: string;

  @PrimaryColumn({ name: 'battery_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'battery_energy_stale_pkey' })
  batteryId!: string;

  @PrimaryColumn({ type: 'timestamptz', primaryKeyConstraintName: 'battery_energy_stale_pkey' })
  bucket!: Date;
}

export const BATTERIES_RECORDS = [BatteryProfileRecord, BatteryEnergyHourRecord, BatteryEnergyStaleRecord];
