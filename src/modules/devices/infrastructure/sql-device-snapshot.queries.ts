import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import type { ConfigOverrides } from '../domain/device-config.js';
import { DeviceSnapshotQueries, type DeviceSnapshot } from '../domain/device-snapshot.queries.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';

/** The columns trigger `devices_announce_change` (migration ConfigAndOta) watches. */
export const ANNOUNCED_DEVICE_COLUMNS = ['token_version', 'credentials_used_at', 'hardware_id', 'firmware_version', 'config_overrides', 'config_revision', 'config_updated_at', 'tags'] as const;
/** Columns written once, at registration. */
export const IMMUTABLE_DEVICE_COLUMNS = ['device_id', 'registered_at'] as const;

interface SnapshotRow {
  device_id: string;
  registered_at: Date;
  token_version: number;
  credentials_used_at: Date | null;
  hardware_id: string;
  firmware_version: string;
  config_overrides: ConfigOverrides;
  config_revision: number;
  config_updated_at: Date | null;
  tags: string[];
}

/** One primary-key read per cache miss of the hot paths (bench S4: polls answered from memory). */
@Injectable()
export class SqlDeviceSnapshotQueries extends DeviceSnapshotQueries {
  private readonly query = `SELECT ${[...IMMUTABLE_DEVICE_COLUMNS, ...ANNOUNCED_DEVICE_COLUMNS].join(', ')} FROM devices WHERE device_id = $1`;

  constructor(private readonly sql: Sql) {
    super();
  }

  async load(deviceId: string): Promise<DeviceSnapshot | null> {
    const [row] = await this.sql.rows<SnapshotRow>(this.query, [deviceId], 'device_snapshot');
    return row
      ? {
          deviceId: row.device_id,
          registeredAt: row.registered_at,
          hardwareId: row.hardware_id,
          firmwareVersion: FirmwareVersion.parse(row.firmware_version),
          tokenVersion: row.token_version,
          credentialsUsed: row.credentials_used_at !== null,
          config: { overrides: row.config_overrides, revision: row.config_revision, updatedAt: row.config_updated_at },
          tags: row.tags,
        }
      : null;
  }
}
