import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql } from '../../../shared/database/sql.js';
import { applyPatch, type ConfigOverrides, type ConfigPatch, type DeviceConfigState } from '../domain/device-config.js';

interface OverridesRow {
  config_overrides: ConfigOverrides;
  config_revision: number;
  config_updated_at: Date | null;
}

const toState = (row: OverridesRow): DeviceConfigState => ({ overrides: row.config_overrides, revision: row.config_revision, updatedAt: row.config_updated_at });

/** The configuration columns of the devices table. */
@Injectable()
export class SqlDeviceConfigRepository {
  constructor(
    private readonly sql: Sql,
    private readonly feed: ChangeFeed,
  ) {}

  /**
   * Applies the patch with the row locked; `precondition` sees the state before the change (If-Match).
   * The revision grows only when an override really changed. Null when the device does not exist.
   */
  async patchOverrides(deviceId: string, patch: ConfigPatch, now: Date, precondition: (current: DeviceConfigState) => void): Promise<DeviceConfigState | null> {
    const state = await this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<OverridesRow>('SELECT config_overrides, config_revision, config_updated_at FROM devices WHERE device_id = $1 FOR UPDATE', [deviceId]);
      if (!row) return null;
      const current = toState(row);
      precondition(current);
      const { overrides, changed } = applyPatch(current.overrides, patch);
      if (!changed) return current;
      const [next] = await tx.rows<OverridesRow>(
        `UPDATE devices SET config_overrides = $2, config_revision = config_revision + 1, config_updated_at = $3
         WHERE device_id = $1 RETURNING config_overrides, config_revision, config_updated_at`,
        [deviceId, overrides, now],
      );
      return toState(next);
    });
    this.feed.changed('device', deviceId);
    return state;
  }

  /** Keeps the highest version the gateway confirmed and when it first confirmed it. */
  async recordApplied(deviceId: string, version: number, now: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE devices SET applied_config_version = $2, config_applied_at = $3, last_seen_at = GREATEST(last_seen_at, $3)
       WHERE device_id = $1 AND (applied_config_version IS NULL OR applied_config_version < $2)`,
      [deviceId, version, now],
      'device_config_applied',
    );
  }
}
