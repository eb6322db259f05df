import { Column, Entity, ForeignKey, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { RefreshTokenColumns } from '../../../shared/auth-tokens/refresh-token.columns.js';
import type { RefreshTokenTable } from '../../../shared/auth-tokens/sql-refresh-token.store.js';
import type { ConfigOverrides } from '../domain/device-config.js';

/**
 * A gateway. The triggers devices_announce_change and devices_announce_delete (change feed,
 * migration ConfigAndOta1763770000000) are beyond TypeORM and live in the migration only.
 */
@Entity({ name: 'devices' })
@Index('devices_owner_idx', ['ownerId', 'deviceId'], { where: 'owner_id IS NOT NULL' })
export class DeviceRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'devices_pkey' })
  deviceId!: string;

  @Column({ name: 'hardware_id', type: 'varchar', length: 128 })
  hardwareId!: string;

  @Column({ name: 'firmware_version', type: 'varchar', length: 64 })
  firmwareVersion!: string;

  @Column({ name: 'claim_code_hash', type: 'text', nullable: true })
  claimCodeHash!: string | null;

  @Column({ name: 'secret_hash', type: 'varchar', length: 64 })
  secretHash!: string;

  @Column({ name: 'token_version', type: 'integer', default: 1 })
  tokenVersion!: number;

  @Column({ name: 'registered_at', type: 'timestamptz' })
  registeredAt!: Date;

  @Column({ name: 'credentials_issued_at', type: 'timestamptz' })
  credentialsIssuedAt!: Date;

  @Column({ name: 'credentials_used_at', type: 'timestamptz', nullable: true })
  credentialsUsedAt!: Date | null;

  @Column({ name: 'last_seen_at', type: 'timestamptz', nullable: true })
  lastSeenAt!: Date | null;

  @Column({ name: 'owner_id', type: 'uuid', nullable: true })
  /** The organization that owns the device (an account's personal organization has the account's id). */
  @ForeignKey('organizations', { name: 'devices_owner_fk', onDelete: 'NO ACTION' })
  ownerId!: string | null;

  @Column({ name: 'claimed_at', type: 'timestamptz', nullable: true })
  claimedAt!: Date | null;

  @Column({ name: 're_registration_until', type: 'timestamptz', nullable: true })
  reRegistrationUntil!: Date | null;

  @Column({ name: 'visible_since', type: 'timestamptz', nullable: true })
  visibleSince!: Date | null;

  @Column({ name: 'last_released_at', type: 'timestamptz', nullable: true })
  lastReleasedAt!: Date | null;

  /** The settings this device sets itself; the fleet defaults fill in the rest. */
  @Column({ name: 'config_overrides', type: 'jsonb', default: {} })
  configOverrides!: ConfigOverrides;

  @Column({ name: 'config_revision', type: 'integer', default: 0 })
  configRevision!: number;

  @Column({ name: 'config_updated_at', type: 'timestamptz', nullable: true })
  configUpdatedAt!: Date | null;

  @Column({ name: 'applied_config_version', type: 'integer', nullable: true })
  appliedConfigVersion!: number | null;

  @Column({ name: 'config_applied_at', type: 'timestamptz', nullable: true })
  configAppliedAt!: Date | null;

  @Column({ name: 'firmware_reported_at', type: 'timestamptz', nullable: true })
  firmwareReportedAt!: Date | null;

  /** When telemetry last arrived (service time); written by the telemetry ingest statement. */
  @Column({ name: 'last_telemetry_at', type: 'timestamptz', nullable: true })
  lastTelemetryAt!: Date | null;

  /** What the owner calls the device (1–64 printable characters); null: unnamed. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  name!: string | null;

  /** The owner's tags: a set of lower-case tags, sorted (device-labels.ts). */
  @Column({ type: 'text', array: true, default: () => "'{}'" })
  tags!: string[];

  /** Set by an administrator's decommission (credentials void, registration refused); cleared when one re-opens it. */
  @Column({ name: 'decommissioned_at', type: 'timestamptz', nullable: true })
  decommissionedAt!: Date | null;

  /** Set by the offline check when telemetry stopped for 3 intervals; cleared by the next telemetry. */
  @Column({ name: 'offline_since', type: 'timestamptz', nullable: true })
  offlineSince!: Date | null;
}

@Entity({ name: 'device_refresh_tokens' })
@Index('device_refresh_tokens_device_idx', ['subjectId'])
@Index('device_refresh_tokens_hash_key', ['tokenHash'], { unique: true })
export class DeviceRefreshTokenRecord extends RefreshTokenColumns {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'device_refresh_tokens_pkey' })
  id!: string;

  @Column({ name: 'device_id', type: 'varchar', length: 64 })
  @ForeignKey(() => DeviceRecord, { name: 'device_refresh_tokens_device_id_fkey', onDelete: 'CASCADE' })
  subjectId!: string;
}

/** DeviceRefreshTokenRecord's table, for SqlRefreshTokenStore. */
export const DEVICE_REFRESH_TOKENS: RefreshTokenTable = { name: 'device_refresh_tokens', subjectColumn: 'device_id' };

@Entity({ name: 'registration_allowlist' })
export class RegistrationAllowlistRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64, primaryKeyConstraintName: 'registration_allowlist_pkey' })
  deviceId!: string;

  @Column({ name: 'hardware_id', type: 'varchar', length: 128 })
  hardwareId!: string;

  @Column({ name: 'imported_by', type: 'uuid' })
  importedBy!: string;

  @Column({ name: 'imported_at', type: 'timestamptz' })
  importedAt!: Date;
}
