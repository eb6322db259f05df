import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql } from '../../../shared/database/sql.js';
import type { ConfigOverrides } from '../domain/device-config.js';
import { Device, type DeviceState } from '../domain/device.js';
import { DeviceRepository } from '../domain/device.repository.js';

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
  re_registration_until: Date | null;
  visible_since: Date | null;
  config_overrides: ConfigOverrides;
  config_revision: number;
  config_updated_at: Date | null;
  applied_config_version: number | null;
  config_applied_at: Date | null;
}

const INSERT_COLUMNS =
  'device_id, hardware_id, firmware_version, claim_code_hash, secret_hash, token_version, registered_at, credentials_issued_at, credentials_used_at, last_seen_at, owner_id, claimed_at, re_registration_until, visible_since';
const DEVICE_COLUMNS = `${INSERT_COLUMNS}, config_overrides, config_revision, config_updated_at, applied_config_version, config_applied_at`;

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
    reRegistrationUntil: row.re_registration_until,
    visibleSince: row.visible_since,
    config: { overrides: row.config_overrides, revision: row.config_revision, updatedAt: row.config_updated_at },
    appliedConfigVersion: row.applied_config_version,
    configAppliedAt: row.config_applied_at,
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
    state.reRegistrationUntil,
    state.visibleSince,
  ];
}

/**
 * Devices on measured SQL, named statements on Sql: device logins, refreshes and the guard's first
 * use of new credentials read and mark devices here (S5 in bench/README.md; bench/sql-parity.ts
 * keeps the baseline's copies of device_by_id and device_mark_used equal to these).
 */
@Injectable()
export class SqlDeviceRepository extends DeviceRepository {
  constructor(
    private readonly sql: Sql,
    private readonly feed: ChangeFeed,
  ) {
    super();
  }

  async findById(deviceId: string): Promise<Device | null> {
    const rows = await this.sql.rows<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE device_id = $1`, [deviceId], 'device_by_id');
    return rows[0] ? toDomain(rows[0]) : null;
  }

  async insertIfAbsent(device: Device): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO devices (${INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       ON CONFLICT (device_id) DO NOTHING RETURNING device_id`,
      toParams(device.toState()),
    );
    return rows.length === 1;
  }

  async updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean): Promise<Device | null> {
    const device = await this.sql.transaction(async (tx) => {
      const rows = await tx.rows<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE device_id = $1 FOR UPDATE`, [deviceId]);
      if (!rows[0]) return null;
      const device = toDomain(rows[0]);
      if (await change(device)) {
        const state = device.toState();
        await tx.rows(
          // A registration reports the firmware version at that moment: OTA events from before it no longer set it.
          `UPDATE devices SET hardware_id = $2, firmware_version = $3, claim_code_hash = $4, secret_hash = $5,
             token_version = $6, credentials_issued_at = $7, credentials_used_at = $8, re_registration_until = $9,
             firmware_reported_at = CASE WHEN credentials_issued_at IS DISTINCT FROM $7 THEN $7 ELSE firmware_reported_at END
           WHERE device_id = $1`,
          [
            state.deviceId,
            state.hardwareId,
            state.firmwareVersion,
            state.claimCodeHash,
            state.secretHash,
            state.tokenVersion,
            state.credentialsIssuedAt,
            state.credentialsUsedAt,
            state.reRegistrationUntil,
          ],
        );
      }
      return device;
    });
    this.feed.changed('device', deviceId);
    return device;
  }

  async markCredentialsUsed(deviceId: string, now: Date): Promise<void> {
    await this.sql.rows('UPDATE devices SET credentials_used_at = $2 WHERE device_id = $1 AND credentials_used_at IS NULL', [deviceId, now], 'device_mark_used');
    this.feed.changed('device', deviceId);
  }

  async claimIfUnowned(deviceId: string, ownerId: string, now: Date): Promise<{ ownerId: string; claimedAt: Date } | null> {
    // A new owner sees history from the last release on; a first owner sees it all.
    const rows = await this.sql.rows<{ owner_id: string; claimed_at: Date }>(
      `UPDATE devices
         SET claimed_at = CASE WHEN owner_id = $2 THEN claimed_at ELSE $3 END,
             visible_since = CASE WHEN owner_id = $2 THEN visible_since ELSE last_released_at END,
             owner_id = $2
       WHERE device_id = $1 AND (owner_id IS NULL OR owner_id = $2)
       RETURNING owner_id, claimed_at`,
      [deviceId, ownerId, now],
    );
    return rows[0] ? { ownerId: rows[0].owner_id, claimedAt: rows[0].claimed_at } : null;
  }

  async releaseIfOwnedBy(deviceId: string, ownerId: string, now: Date): Promise<boolean> {
    const rows = await this.sql.rows(
      `UPDATE devices SET owner_id = NULL, claimed_at = NULL, visible_since = NULL, re_registration_until = NULL, last_released_at = $3
       WHERE device_id = $1 AND owner_id = $2 RETURNING device_id`,
      [deviceId, ownerId, now],
    );
    return rows.length === 1;
  }

  async listOwnedBy(ownerId: string): Promise<Device[]> {
    const rows = await this.sql.rows<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE owner_id = $1 ORDER BY claimed_at DESC, device_id`, [ownerId]);
    return rows.map(toDomain);
  }
}
