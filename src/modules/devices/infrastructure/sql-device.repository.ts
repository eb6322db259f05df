import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql } from '../../../shared/database/sql.js';
import { Device } from '../domain/device.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { DeviceLabelsPatch } from '../domain/device-labels.js';
import { DeviceRepository, type AdminChange, type AdminChanged, type OwnedDevicesPage, type OwnershipChanged, type ReturnedDevice, type SilentDevice } from '../domain/device.repository.js';
import { DEVICE_ONLINE } from '../sql-api.js';
import type { ConfigOverrides } from '../domain/device-config.js';

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
  decommissioned_at: Date | null;
}

const DEVICE_COLUMNS =
  'device_id, hardware_id, firmware_version, claim_code_hash, secret_hash, token_version, registered_at, credentials_issued_at, credentials_used_at, last_seen_at, owner_id, claimed_at, re_registration_until, visible_since, config_overrides, config_revision, config_updated_at, applied_config_version, config_applied_at, decommissioned_at';

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
    decommissionedAt: row.decommissioned_at,
  });
}

/**
 * Devices as registration, logins, refreshes and claims see them: cold paths. The device-facing hot
 * paths (token check, config and OTA polls) read DeviceSnapshots instead (SqlDeviceSnapshotQueries).
 * Writes of announced columns tell the change feed, so this instance's snapshots forget the device at once.
 */
@Injectable()
export class SqlDeviceRepository extends DeviceRepository {
  constructor(
    private readonly feed: ChangeFeed,
    private readonly sql: Sql,
  ) {
    super();
  }

  async findById(deviceId: string): Promise<Device | null> {
    const [row] = await this.sql.rows<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE device_id = $1`, [deviceId]);
    return row ? toDomain(row) : null;
  }

  async insertIfAbsent(device: Device): Promise<boolean> {
    const state = device.toState();
    // ON CONFLICT DO NOTHING: the primary key decides atomically between concurrent registrations.
    // The configuration columns, last_released_at and firmware_reported_at keep their defaults.
    const inserted = await this.sql.rows(
      `INSERT INTO devices (device_id, hardware_id, firmware_version, claim_code_hash, secret_hash, token_version, registered_at, credentials_issued_at,
                            credentials_used_at, last_seen_at, owner_id, claimed_at, re_registration_until, visible_since)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT DO NOTHING RETURNING device_id`,
      [state.deviceId, state.hardwareId, state.firmwareVersion, state.claimCodeHash, state.secretHash, state.tokenVersion, state.registeredAt, state.credentialsIssuedAt,
        state.credentialsUsedAt, state.lastSeenAt, state.ownerId, state.claimedAt, state.reRegistrationUntil, state.visibleSince],
    );
    return inserted.length === 1;
  }

  async updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean, onChanged?: OwnershipChanged): Promise<Device | null> {
    const device = await this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE device_id = $1 FOR UPDATE`, [deviceId]);
      if (!row) return null;
      const device = toDomain(row);
      if (await change(device)) {
        const state = device.toState();
        // A registration reports the firmware version at that moment: OTA events from before it no longer set it.
        await tx.rows(
          `UPDATE devices SET hardware_id = $2, firmware_version = $3, claim_code_hash = $4, secret_hash = $5, token_version = $6,
                  credentials_issued_at = $7, credentials_used_at = $8, re_registration_until = $9,
                  firmware_reported_at = CASE WHEN credentials_issued_at IS DISTINCT FROM $7 THEN $7 ELSE firmware_reported_at END
            WHERE device_id = $1`,
          [deviceId, state.hardwareId, state.firmwareVersion, state.claimCodeHash, state.secretHash, state.tokenVersion, state.credentialsIssuedAt, state.credentialsUsedAt, state.reRegistrationUntil],
        );
        await onChanged?.(tx);
      }
      return device;
    });
    this.feed.changed('device', deviceId);
    return device;
  }

  async markCredentialsUsed(deviceId: string, now: Date): Promise<void> {
    await this.sql.rows('UPDATE devices SET credentials_used_at = $2 WHERE device_id = $1 AND credentials_used_at IS NULL', [deviceId, now]);
    this.feed.changed('device', deviceId);
  }

  async claimIfUnowned(deviceId: string, ownerId: string, now: Date, onClaimed?: OwnershipChanged): Promise<{ ownerId: string; claimedAt: Date } | null> {
    // A new owner sees history from the last release on; a first owner sees it all.
    return this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<{ owner_id: string; claimed_at: Date }>(
        `UPDATE devices SET claimed_at = CASE WHEN owner_id = $2 THEN claimed_at ELSE $3 END,
                visible_since = CASE WHEN owner_id = $2 THEN visible_since ELSE last_released_at END,
                owner_id = $2
          WHERE device_id = $1 AND (owner_id IS NULL OR owner_id = $2)
          RETURNING owner_id, claimed_at`,
        [deviceId, ownerId, now],
      );
      if (!row) return null;
      // claimed_at is `now` only when this UPDATE gave the device to ownerId.
      if (onClaimed && row.claimed_at.getTime() === now.getTime()) await onClaimed(tx);
      return { ownerId: row.owner_id, claimedAt: row.claimed_at };
    });
  }

  async releaseIfOwnedBy(deviceId: string, ownerId: string, now: Date, onReleased?: OwnershipChanged, within?: SqlRunner): Promise<boolean> {
    const release = async (tx: SqlRunner) => {
      // What the owner called the device is theirs: the next owner starts without it.
      const released = await tx.rows(
        `UPDATE devices SET owner_id = NULL, claimed_at = NULL, visible_since = NULL, re_registration_until = NULL, last_released_at = $3, name = NULL, tags = '{}'
          WHERE device_id = $1 AND owner_id = $2 RETURNING device_id`,
        [deviceId, ownerId, now],
      );
      if (released.length !== 1) return false;
      await onReleased?.(tx);
      return true;
    };
    return within ? release(within) : this.sql.transaction(release);
  }

  async lockOwnedBy(ownerId: string, tx: SqlRunner): Promise<string[]> {
    const rows = await tx.rows<{ device_id: string }>('SELECT device_id FROM devices WHERE owner_id = $1 ORDER BY device_id FOR NO KEY UPDATE', [ownerId]);
    return rows.map((row) => row.device_id);
  }

  async relabelIfOwnedBy(deviceId: string, ownerId: string | null, patch: DeviceLabelsPatch, onRelabeled?: OwnershipChanged): Promise<boolean> {
    const values: unknown[] = [deviceId, ownerId];
    const set: string[] = [];
    if (patch.name !== undefined) set.push(`name = $${values.push(patch.name)}`);
    if (patch.tags !== undefined) set.push(`tags = $${values.push(patch.tags)}::text[]`);
    return this.sql.transaction(async (tx) => {
      const relabeled = await tx.rows(`UPDATE devices SET ${set.join(', ')} WHERE device_id = $1 AND owner_id IS NOT DISTINCT FROM $2::uuid RETURNING device_id`, values);
      if (relabeled.length !== 1) return false;
      await onRelabeled?.(tx);
      return true;
    });
  }

  async transferTo(deviceId: string, ownerId: string, now: Date, onTransferred?: AdminChanged): Promise<(AdminChange & { claimedAt: Date }) | null> {
    const result = await this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<{ owner_id: string | null; claimed_at: Date | null }>('SELECT owner_id, claimed_at FROM devices WHERE device_id = $1 FOR UPDATE', [deviceId]);
      if (!row) return null;
      if (row.owner_id === ownerId) return { changed: false, previousOwnerId: ownerId, claimedAt: row.claimed_at ?? now };
      // As a claim: from the last release on when nobody owned it; else the previous owner's time ends now.
      await tx.rows(
        `UPDATE devices SET owner_id = $2, claimed_at = $3,
                visible_since = CASE WHEN owner_id IS NULL THEN last_released_at ELSE $3 END,
                last_released_at = CASE WHEN owner_id IS NULL THEN last_released_at ELSE $3 END,
                re_registration_until = NULL, name = NULL, tags = '{}'
          WHERE device_id = $1`,
        [deviceId, ownerId, now],
      );
      await onTransferred?.(tx, row.owner_id);
      return { changed: true, previousOwnerId: row.owner_id, claimedAt: now };
    });
    this.feed.changed('device', deviceId);
    return result;
  }

  async decommission(deviceId: string, now: Date, secretHash: string, onDecommissioned?: AdminChanged): Promise<(AdminChange & { decommissionedAt: Date }) | null> {
    const result = await this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<{ owner_id: string | null; decommissioned_at: Date | null }>('SELECT owner_id, decommissioned_at FROM devices WHERE device_id = $1 FOR UPDATE', [deviceId]);
      if (!row) return null;
      if (row.decommissioned_at) return { changed: false, previousOwnerId: row.owner_id, decommissionedAt: row.decommissioned_at };
      // A new token version refuses every access token (the change feed tells every instance's
      // snapshots); the new secret, which nobody holds, refuses logins; refresh tokens are revoked.
      await tx.rows(
        `UPDATE devices SET decommissioned_at = $2, owner_id = NULL, claimed_at = NULL, visible_since = NULL, last_released_at = $2,
                re_registration_until = NULL, name = NULL, tags = '{}', secret_hash = $3, token_version = token_version + 1
          WHERE device_id = $1`,
        [deviceId, now, secretHash],
      );
      await tx.rows('UPDATE device_refresh_tokens SET revoked_at = $2 WHERE device_id = $1 AND revoked_at IS NULL', [deviceId, now]);
      await onDecommissioned?.(tx, row.owner_id);
      return { changed: true, previousOwnerId: row.owner_id, decommissionedAt: now };
    });
    this.feed.changed('device', deviceId);
    return result;
  }

  async reopen(deviceId: string, until: Date, onReopened?: OwnershipChanged): Promise<{ changed: boolean; openUntil: Date | null } | null> {
    const result = await this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<{ decommissioned_at: Date | null; re_registration_until: Date | null }>(
        'SELECT decommissioned_at, re_registration_until FROM devices WHERE device_id = $1 FOR UPDATE',
        [deviceId],
      );
      if (!row) return null;
      if (!row.decommissioned_at) return { changed: false, openUntil: row.re_registration_until };
      await tx.rows('UPDATE devices SET decommissioned_at = NULL, re_registration_until = $2 WHERE device_id = $1', [deviceId, until]);
      await onReopened?.(tx);
      return { changed: true, openUntil: until };
    });
    this.feed.changed('device', deviceId);
    return result;
  }

  async listOwnedBy(ownerId: string, page: OwnedDevicesPage): Promise<Device[]> {
    const rows = page.after
      ? await this.sql.rows<DeviceRow>(
          `SELECT ${DEVICE_COLUMNS} FROM devices WHERE owner_id = $1 AND (claimed_at < $2 OR (claimed_at = $2 AND device_id > $3)) ORDER BY claimed_at DESC, device_id ASC LIMIT $4`,
          [ownerId, page.after.claimedAt, page.after.deviceId, page.limit],
        )
      : await this.sql.rows<DeviceRow>(`SELECT ${DEVICE_COLUMNS} FROM devices WHERE owner_id = $1 ORDER BY claimed_at DESC, device_id ASC LIMIT $2`, [ownerId, page.limit]);
    return rows.map(toDomain);
  }

  async markSilentOffline(now: Date, defaultIntervalSec: number, onOffline: (tx: SqlRunner, devices: SilentDevice[]) => Promise<void>): Promise<number> {
    // Plain SQL: this runs every few seconds on every instance, and Sql's transaction survives a
    // session killed under it (TypeORM's leaves an unheard 'error' on the client).
    return this.sql.transaction(async (tx) => {
      // SKIP LOCKED: a device an ingest flush holds is being heard from right now.
      const rows = await tx.rows<{ device_id: string; owner_id: string | null; last_telemetry_at: Date }>(
        `UPDATE devices d SET offline_since = $1
           FROM (SELECT device_id FROM devices
                  WHERE offline_since IS NULL AND last_telemetry_at IS NOT NULL
                    AND NOT ${DEVICE_ONLINE}(last_telemetry_at, COALESCE((config_overrides->>'telemetryIntervalSec')::int, $2::int), $1::timestamptz)
                  ORDER BY device_id FOR NO KEY UPDATE SKIP LOCKED) AS silent
          WHERE d.device_id = silent.device_id
          RETURNING d.device_id, d.owner_id, d.last_telemetry_at`,
        [now, defaultIntervalSec],
      );
      if (rows.length > 0) await onOffline(tx, rows.map((row) => ({ deviceId: row.device_id, ownerId: row.owner_id, lastTelemetryAt: row.last_telemetry_at })));
      return rows.length;
    });
  }

  async markBackOnline(deviceIds: string[], onBack: (tx: SqlRunner, devices: ReturnedDevice[]) => Promise<void>): Promise<number> {
    return this.sql.transaction(async (tx) => {
      // Locked in device order, as the ingest statement locks them; a row another flush cleared
      // meanwhile fails the recheck under the lock and is left out.
      const rows = await tx.rows<{ device_id: string; owner_id: string | null; offline_since: Date }>(
        `UPDATE devices d SET offline_since = NULL
           FROM (SELECT device_id, offline_since FROM devices WHERE device_id = ANY($1::text[]) AND offline_since IS NOT NULL
                  ORDER BY device_id FOR NO KEY UPDATE) AS marked
          WHERE d.device_id = marked.device_id
          RETURNING d.device_id, d.owner_id, marked.offline_since`,
        [deviceIds],
        'devices_back_online',
      );
      if (rows.length > 0) await onBack(tx, rows.map((row) => ({ deviceId: row.device_id, ownerId: row.owner_id, offlineSince: row.offline_since })));
      return rows.length;
    });
  }
}
