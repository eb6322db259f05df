import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Orm } from '../../../shared/database/orm.js';
import { Sql } from '../../../shared/database/sql.js';
import { Device, type DeviceState } from '../domain/device.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { DeviceLabelsPatch } from '../domain/device-labels.js';
import { DeviceRepository, type AdminChange, type AdminChanged, type OwnedDevicesPage, type OwnershipChanged, type ReturnedDevice, type SilentDevice } from '../domain/device.repository.js';
import { DEVICE_ONLINE } from '../sql-api.js';
import { DeviceRecord } from './device.record.js';

function toDomain(record: DeviceRecord): Device {
  return Device.restore({
    deviceId: record.deviceId,
    hardwareId: record.hardwareId,
    firmwareVersion: record.firmwareVersion,
    claimCodeHash: record.claimCodeHash,
    secretHash: record.secretHash,
    tokenVersion: record.tokenVersion,
    registeredAt: record.registeredAt,
    credentialsIssuedAt: record.credentialsIssuedAt,
    credentialsUsedAt: record.credentialsUsedAt,
    lastSeenAt: record.lastSeenAt,
    ownerId: record.ownerId,
    claimedAt: record.claimedAt,
    reRegistrationUntil: record.reRegistrationUntil,
    visibleSince: record.visibleSince,
    config: { overrides: record.configOverrides, revision: record.configRevision, updatedAt: record.configUpdatedAt },
    appliedConfigVersion: record.appliedConfigVersion,
    configAppliedAt: record.configAppliedAt,
    decommissionedAt: record.decommissionedAt,
  });
}

/** What a registration stores; the configuration columns, last_released_at and firmware_reported_at keep their defaults. */
function toNewRecord(state: DeviceState) {
  return {
    deviceId: state.deviceId,
    hardwareId: state.hardwareId,
    firmwareVersion: state.firmwareVersion,
    claimCodeHash: state.claimCodeHash,
    secretHash: state.secretHash,
    tokenVersion: state.tokenVersion,
    registeredAt: state.registeredAt,
    credentialsIssuedAt: state.credentialsIssuedAt,
    credentialsUsedAt: state.credentialsUsedAt,
    lastSeenAt: state.lastSeenAt,
    ownerId: state.ownerId,
    claimedAt: state.claimedAt,
    reRegistrationUntil: state.reRegistrationUntil,
    visibleSince: state.visibleSince,
  };
}

/**
 * Devices as registration, logins, refreshes and claims see them: cold paths, on TypeORM. The
 * device-facing hot paths (token check, config and OTA polls) read DeviceSnapshots instead
 * (SqlDeviceSnapshotQueries). Writes of announced columns tell the change feed, so this instance's
 * snapshots forget the device at once.
 */
@Injectable()
export class TypeOrmDeviceRepository extends DeviceRepository {
  constructor(
    private readonly orm: Orm,
    private readonly feed: ChangeFeed,
    private readonly sql: Sql,
  ) {
    super();
  }

  async findById(deviceId: string): Promise<Device | null> {
    const record = await this.orm.run((manager) => manager.findOneBy(DeviceRecord, { deviceId }));
    return record ? toDomain(record) : null;
  }

  async insertIfAbsent(device: Device): Promise<boolean> {
    // ON CONFLICT DO NOTHING: the primary key decides atomically between concurrent registrations.
    const result = await this.orm.run((manager) =>
      manager.createQueryBuilder().insert().into(DeviceRecord).values(toNewRecord(device.toState())).orIgnore().returning(['deviceId']).updateEntity(false).execute(),
    );
    return (result.raw as unknown[]).length === 1;
  }

  async updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean, onChanged?: OwnershipChanged): Promise<Device | null> {
    const device = await this.orm.transaction(async (tx, sql) => {
      const record = await tx.findOne(DeviceRecord, { where: { deviceId }, lock: { mode: 'pessimistic_write' } });
      if (!record) return null;
      const device = toDomain(record);
      if (await change(device)) {
        const state = device.toState();
        await tx
          .createQueryBuilder()
          .update(DeviceRecord)
          .set({
            hardwareId: state.hardwareId,
            firmwareVersion: state.firmwareVersion,
            claimCodeHash: state.claimCodeHash,
            secretHash: state.secretHash,
            tokenVersion: state.tokenVersion,
            credentialsIssuedAt: state.credentialsIssuedAt,
            credentialsUsedAt: state.credentialsUsedAt,
            reRegistrationUntil: state.reRegistrationUntil,
            // A registration reports the firmware version at that moment: OTA events from before it no longer set it.
            firmwareReportedAt: () => 'CASE WHEN credentials_issued_at IS DISTINCT FROM :issuedAt THEN :issuedAt ELSE firmware_reported_at END',
          })
          .where('device_id = :deviceId', { deviceId })
          .setParameter('issuedAt', state.credentialsIssuedAt)
          .execute();
        await onChanged?.(sql);
      }
      return device;
    });
    this.feed.changed('device', deviceId);
    return device;
  }

  async markCredentialsUsed(deviceId: string, now: Date): Promise<void> {
    await this.orm.run((manager) =>
      manager
        .createQueryBuilder()
        .update(DeviceRecord)
        .set({ credentialsUsedAt: now })
        .where('device_id = :deviceId', { deviceId })
        .andWhere('credentials_used_at IS NULL')
        .execute(),
    );
    this.feed.changed('device', deviceId);
  }

  async claimIfUnowned(deviceId: string, ownerId: string, now: Date, onClaimed?: OwnershipChanged): Promise<{ ownerId: string; claimedAt: Date } | null> {
    // A new owner sees history from the last release on; a first owner sees it all.
    return this.orm.transaction(async (manager, tx) => {
      const result = await manager
        .createQueryBuilder()
        .update(DeviceRecord)
        .set({
          claimedAt: () => 'CASE WHEN owner_id = :ownerId THEN claimed_at ELSE :now END',
          visibleSince: () => 'CASE WHEN owner_id = :ownerId THEN visible_since ELSE last_released_at END',
          ownerId,
        })
        .where('device_id = :deviceId', { deviceId })
        .andWhere('(owner_id IS NULL OR owner_id = :ownerId)', { ownerId })
        .setParameter('now', now)
        .returning(['ownerId', 'claimedAt'])
        .updateEntity(false)
        .execute();
      const [row] = result.raw as Array<{ owner_id: string; claimed_at: Date }>;
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
    return within ? release(within) : this.orm.transaction((_manager, tx) => release(tx));
  }

  async lockOwnedBy(ownerId: string, tx: SqlRunner): Promise<string[]> {
    const rows = await tx.rows<{ device_id: string }>('SELECT device_id FROM devices WHERE owner_id = $1 ORDER BY device_id FOR NO KEY UPDATE', [ownerId]);
    return rows.map((row) => row.device_id);
  }

  async relabelIfOwnedBy(deviceId: string, ownerId: string | null, patch: DeviceLabelsPatch, onRelabeled?: OwnershipChanged): Promise<boolean> {
    return this.orm.transaction(async (manager, tx) => {
      const result = await manager
        .createQueryBuilder()
        .update(DeviceRecord)
        .set({ ...(patch.name !== undefined ? { name: patch.name } : {}), ...(patch.tags !== undefined ? { tags: patch.tags } : {}) })
        .where('device_id = :deviceId', { deviceId })
        .andWhere('owner_id IS NOT DISTINCT FROM CAST(:ownerId AS uuid)', { ownerId })
        .execute();
      if (result.affected !== 1) return false;
      await onRelabeled?.(tx);
      return true;
    });
  }

  async transferTo(deviceId: string, ownerId: string, now: Date, onTransferred?: AdminChanged): Promise<(AdminChange & { claimedAt: Date }) | null> {
    const result = await this.orm.transaction(async (_manager, tx) => {
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
    const result = await this.orm.transaction(async (_manager, tx) => {
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
    const result = await this.orm.transaction(async (_manager, tx) => {
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
    const records = await this.orm.run((manager) => {
      const query = manager.createQueryBuilder(DeviceRecord, 'd').where('d.ownerId = :ownerId', { ownerId });
      if (page.after) {
        query.andWhere('(d.claimedAt < :claimedAt OR (d.claimedAt = :claimedAt AND d.deviceId > :deviceId))', { claimedAt: page.after.claimedAt, deviceId: page.after.deviceId });
      }
      return query.orderBy('d.claimedAt', 'DESC').addOrderBy('d.deviceId', 'ASC').limit(page.limit).getMany();
    });
    return records.map(toDomain);
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
