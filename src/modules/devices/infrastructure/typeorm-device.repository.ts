import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { Device, type DeviceState } from '../domain/device.js';
import { DeviceRepository, type StoredRefreshToken } from '../domain/device.repository.js';

interface DeviceRow {
  device_id: string;
  hardware_id: string;
  firmware_version: string;
  claim_code_hash: string | null;
  secret_hash: string;
  token_version: number;
  registered_at: Date;
  credentials_issued_at: Date;
  credentials_used_at: Date | null;
  last_seen_at: Date | null;
  owner_id: string | null;
  claimed_at: Date | null;
}

const DEVICE_COLUMNS =
  'device_id, hardware_id, firmware_version, claim_code_hash, secret_hash, token_version, registered_at, credentials_issued_at, credentials_used_at, last_seen_at, owner_id, claimed_at';

function toDomain(row: DeviceRow): Device {
  return Device.restore({
    deviceId: row.device_id,
    hardwareId: row.hardware_id,
    firmwareVersion: row.firmware_version,
    claimCodeHash: row.claim_code_hash,
    secretHash: row.secret_hash,
    tokenVersion: row.token_version,
    registeredAt: row.registered_at,
    credentialsIssuedAt: row.credentials_issued_at,
    credentialsUsedAt: row.credentials_used_at,
    lastSeenAt: row.last_seen_at,
    ownerId: row.owner_id,
    claimedAt: row.claimed_at,
  });
}

function toParams(state: DeviceState): unknown[] {
  return [
    state.deviceId,
    state.hardwareId,
    state.firmwareVersion,
    state.claimCodeHash,
    state.secretHash,
    state.tokenVersion,
    state.registeredAt,
    state.credentialsIssuedAt,
    state.credentialsUsedAt,
    state.lastSeenAt,
    state.ownerId,
    state.claimedAt,
  ];
}

@Injectable()
export class TypeOrmDeviceRepository extends DeviceRepository {
  constructor(private readonly sql: Sql) {
    super();
  }

  async findById(deviceId: string): Promise<Device | null> {
    const rows = await this.sql.rows<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE device_id = $1`, [deviceId], 'device_by_id');
    return rows[0] ? toDomain(rows[0]) : null;
  }

  async insertIfAbsent(device: Device): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO devices (${DEVICE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       ON CONFLICT (device_id) DO NOTHING RETURNING device_id`,
      toParams(device.toState()),
    );
    return rows.length === 1;
  }

  async updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean): Promise<Device | null> {
    return this.sql.transaction(async (tx) => {
      const rows = await tx.rows<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE device_id = $1 FOR UPDATE`, [deviceId]);
      if (!rows[0]) return null;
      const device = toDomain(rows[0]);
      if (await change(device)) {
        const state = device.toState();
        await tx.rows(
          `UPDATE devices SET hardware_id = $2, firmware_version = $3, claim_code_hash = $4, secret_hash = $5,
             token_version = $6, credentials_issued_at = $7, credentials_used_at = $8
           WHERE device_id = $1`,
          [state.deviceId, state.hardwareId, state.firmwareVersion, state.claimCodeHash, state.secretHash, state.tokenVersion, state.credentialsIssuedAt, state.credentialsUsedAt],
        );
      }
      return device;
    });
  }

  async markCredentialsUsed(deviceId: string, now: Date): Promise<void> {
    await this.sql.rows('UPDATE devices SET credentials_used_at = $2 WHERE device_id = $1 AND credentials_used_at IS NULL', [deviceId, now]);
  }

  async insertRefreshToken(token: { deviceId: string; tokenVersion: number; tokenHash: string; expiresAt: Date }): Promise<void> {
    await this.sql.rows(
      `INSERT INTO device_refresh_tokens (device_id, token_version, token_hash, issued_at, expires_at) VALUES ($1, $2, $3, now(), $4)`,
      [token.deviceId, token.tokenVersion, token.tokenHash, token.expiresAt],
    );
  }

  async findRefreshToken(tokenHash: string): Promise<StoredRefreshToken | null> {
    const rows: Array<{ id: string; device_id: string; token_version: number; expires_at: Date; rotated_at: Date | null; revoked_at: Date | null }> =
      await this.sql.rows(
        'SELECT id, device_id, token_version, expires_at, rotated_at, revoked_at FROM device_refresh_tokens WHERE token_hash = $1',
        [tokenHash],
      );
    const row = rows[0];
    return row
      ? { id: row.id, deviceId: row.device_id, tokenVersion: row.token_version, expiresAt: row.expires_at, rotatedAt: row.rotated_at, revokedAt: row.revoked_at }
      : null;
  }

  async rotateRefreshToken(id: string, now: Date): Promise<boolean> {
    const rows = await this.sql.rows(
      'UPDATE device_refresh_tokens SET rotated_at = $2 WHERE id = $1 AND rotated_at IS NULL AND revoked_at IS NULL RETURNING id',
      [id, now],
    );
    return rows.length === 1;
  }

  async revokeRefreshTokens(deviceId: string, now: Date): Promise<void> {
    await this.sql.rows('UPDATE device_refresh_tokens SET revoked_at = $2 WHERE device_id = $1 AND revoked_at IS NULL', [deviceId, now]);
  }
}
