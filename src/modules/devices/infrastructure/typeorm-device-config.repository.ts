import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Orm } from '../../../shared/database/orm.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { applyPatch, type ConfigOverrides, type ConfigPatch, type DeviceConfigState } from '../domain/device-config.js';
import { DeviceConfigRepository } from '../domain/device-config.repository.js';
import { DeviceRecord } from './device.record.js';

interface OverridesRow {
  config_overrides: ConfigOverrides;
  config_revision: number;
  config_updated_at: Date | null;
}

const fromRecord = (record: Pick<DeviceRecord, 'configOverrides' | 'configRevision' | 'configUpdatedAt'>): DeviceConfigState => ({
  overrides: record.configOverrides,
  revision: record.configRevision,
  updatedAt: record.configUpdatedAt,
});
const fromRow = (row: OverridesRow): DeviceConfigState => ({ overrides: row.config_overrides, revision: row.config_revision, updatedAt: row.config_updated_at });

/** The configuration columns of the devices table: operators' edits and gateways' confirmations, a cold path on TypeORM. */
@Injectable()
export class TypeOrmDeviceConfigRepository extends DeviceConfigRepository {
  constructor(
    private readonly orm: Orm,
    private readonly feed: ChangeFeed,
  ) {
    super();
  }

  async patchOverrides(
    deviceId: string,
    patch: ConfigPatch,
    now: Date,
    precondition: (current: DeviceConfigState) => void,
    onChanged?: (tx: SqlRunner) => Promise<void>,
  ): Promise<DeviceConfigState | null> {
    const state = await this.orm.transaction(async (tx, sql) => {
      const record = await tx.findOne(DeviceRecord, {
        select: { deviceId: true, configOverrides: true, configRevision: true, configUpdatedAt: true },
        where: { deviceId },
        lock: { mode: 'pessimistic_write' },
      });
      if (!record) return null;
      const current = fromRecord(record);
      precondition(current);
      const { overrides, changed } = applyPatch(current.overrides, patch);
      if (!changed) return current;
      const result = await tx
        .createQueryBuilder()
        .update(DeviceRecord)
        .set({ configOverrides: overrides, configRevision: () => 'config_revision + 1', configUpdatedAt: now })
        .where('device_id = :deviceId', { deviceId })
        .returning(['configOverrides', 'configRevision', 'configUpdatedAt'])
        .updateEntity(false)
        .execute();
      await onChanged?.(sql);
      return fromRow((result.raw as OverridesRow[])[0]);
    });
    this.feed.changed('device', deviceId);
    return state;
  }

  async recordApplied(deviceId: string, version: number, now: Date, onApplied?: (tx: SqlRunner, ownerId: string | null) => Promise<void>): Promise<void> {
    await this.orm.transaction(async (manager, tx) => {
      const result = await manager
        .createQueryBuilder()
        .update(DeviceRecord)
        .set({ appliedConfigVersion: version, configAppliedAt: now, lastSeenAt: () => 'GREATEST(last_seen_at, :now)' })
        .where('device_id = :deviceId', { deviceId })
        .andWhere('(applied_config_version IS NULL OR applied_config_version < :version)', { version })
        .setParameter('now', now)
        .returning(['ownerId'])
        .updateEntity(false)
        .execute();
      const [row] = result.raw as Array<{ owner_id: string | null }>;
      if (row && onApplied) await onApplied(tx, row.owner_id);
    });
  }
}
