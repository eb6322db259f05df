import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { RefreshTokenColumns } from '../../../shared/auth-tokens/refresh-token.columns.js';

@Entity({ name: 'devices' })
export class DeviceRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64 })
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
  ownerId!: string | null;

  @Column({ name: 'claimed_at', type: 'timestamptz', nullable: true })
  claimedAt!: Date | null;

  @Column({ name: 're_registration_until', type: 'timestamptz', nullable: true })
  reRegistrationUntil!: Date | null;

  @Column({ name: 'visible_since', type: 'timestamptz', nullable: true })
  visibleSince!: Date | null;

  @Column({ name: 'last_released_at', type: 'timestamptz', nullable: true })
  lastReleasedAt!: Date | null;
}

@Entity({ name: 'device_refresh_tokens' })
@Index('device_refresh_tokens_device_idx', ['deviceId'])
@Index('device_refresh_tokens_hash_key', ['tokenHash'], { unique: true })
export class DeviceRefreshTokenRecord extends RefreshTokenColumns {
  @Column({ name: 'device_id', type: 'varchar', length: 64 })
  deviceId!: string;
}

@Entity({ name: 'registration_allowlist' })
export class RegistrationAllowlistRecord {
  @PrimaryColumn({ name: 'device_id', type: 'varchar', length: 64 })
  deviceId!: string;

  @Column({ name: 'hardware_id', type: 'varchar', length: 128 })
  hardwareId!: string;

  @Column({ name: 'imported_by', type: 'uuid' })
  importedBy!: string;

  @Column({ name: 'imported_at', type: 'timestamptz' })
  importedAt!: Date;
}
