import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';

/**
 * A published firmware image and its rollout. The identity index compares versions numerically
 * (firmware_version_key(version), a SQL function) and treats a missing hardware id as one value:
 * TypeORM can neither express nor read back an expression index, so it is declared by name with
 * `synchronize: false` (the schema diff leaves it alone) and lives in the migration only, like
 * the change-feed trigger firmware_releases_announce_change.
 */
@Entity({ name: 'firmware_releases' })
@Index('firmware_releases_identity_key', { synchronize: false })
@Check('firmware_releases_channel_check', "channel IN ('stable', 'beta')")
@Check('firmware_releases_rollout_percent_check', 'rollout_percent BETWEEN 0 AND 100')
@Check('firmware_releases_max_failure_percent_check', 'max_failure_percent BETWEEN 0 AND 100')
@Check('firmware_releases_min_crash_free_percent_check', 'min_crash_free_percent BETWEEN 0 AND 100')
@Check('firmware_releases_target_device_ids_check', 'cardinality(target_device_ids) <= 10000')
@Check('firmware_releases_signed_check', '(signing_key_id IS NULL) = (signature IS NULL) AND (signature IS NULL) = (manifest IS NULL)')
@Index('firmware_releases_signing_key_id_idx', ['signingKeyId'], { where: 'signing_key_id IS NOT NULL' })
export class FirmwareReleaseRecord {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'firmware_releases_pkey' })
  id!: string;

  @Column({ type: 'varchar', length: 64 })
  version!: string;

  @Column({ name: 'hardware_id', type: 'varchar', length: 128, nullable: true })
  hardwareId!: string | null;

  @Column({ type: 'varchar', length: 16 })
  channel!: 'stable' | 'beta';

  @Column({ type: 'text' })
  url!: string;

  @Column({ type: 'char', length: 64 })
  sha256!: string;

  /** bigint: the driver hands it over as a string. */
  @Column({ type: 'bigint' })
  size!: string;

  @Column({ name: 'release_notes', type: 'text', nullable: true })
  releaseNotes!: string | null;

  @Column({ name: 'rollout_percent', type: 'smallint' })
  rolloutPercent!: number;

  @Column({ name: 'min_from_version', type: 'varchar', length: 64, nullable: true })
  minFromVersion!: string | null;

  @Column({ name: 'max_failure_percent', type: 'smallint', nullable: true })
  maxFailurePercent!: number | null;

  /** The rollout pauses itself when fewer devices stay crash-free for a day after confirming it (migration ReleaseHealth). */
  @Column({ name: 'min_crash_free_percent', type: 'smallint', nullable: true })
  minCrashFreePercent!: number | null;

  @Column({ type: 'boolean', default: false })
  paused!: boolean;

  @Column({ name: 'auto_paused_at', type: 'timestamptz', nullable: true })
  autoPausedAt!: Date | null;

  /** The failure budget counts devices whose last event came after this (set on a manual resume). */
  @Column({ name: 'failure_budget_since', type: 'timestamptz', nullable: true })
  failureBudgetSince!: Date | null;

  @Column({ type: 'boolean', default: false })
  revoked!: boolean;

  /** Published without a URL: offered once its image is stored whole (migration FirmwareImages). */
  @Column({ name: 'awaiting_image', type: 'boolean', default: false })
  awaitingImage!: boolean;

  @Column({ name: 'published_at', type: 'timestamptz' })
  publishedAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  /** A signed release: the key, the Ed25519 signature and the manifest it covers, as published (migration FirmwareSigning). */
  @Column({ name: 'signing_key_id', type: 'varchar', length: 64, nullable: true })
  @ForeignKey('firmware_signing_keys', { name: 'firmware_releases_signing_key_id_fkey' })
  signingKeyId!: string | null;

  @Column({ type: 'bytea', nullable: true })
  signature!: Buffer | null;

  @Column({ type: 'text', nullable: true })
  manifest!: string | null;

  /** Campaigns (migration FirmwareCampaigns): offered to devices with any of these tags or among these ids; none: every device. */
  @Column({ name: 'target_tags', type: 'text', array: true, nullable: true })
  targetTags!: string[] | null;

  @Column({ name: 'target_device_ids', type: 'text', array: true, nullable: true })
  targetDeviceIds!: string[] | null;

  /** Offered from this instant on. */
  @Column({ name: 'starts_at', type: 'timestamptz', nullable: true })
  startsAt!: Date | null;

  /** Revoked with a way back: devices that run it are offered this older release. */
  @Column({ name: 'rollback_to', type: 'uuid', nullable: true })
  @ForeignKey('firmware_releases', { name: 'firmware_releases_rollback_to_fkey' })
  rollbackTo!: string | null;
}
