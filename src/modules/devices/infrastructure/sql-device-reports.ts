import { Injectable } from '@nestjs/common';
import type { SqlRunner } from '../../../shared/database/sql.js';
import { DeviceReports } from '../domain/device-reports.js';

@Injectable()
export class SqlDeviceReports extends DeviceReports {
  async lock(tx: SqlRunner, deviceId: string): Promise<{ firmwareReportedAt: Date | null; ownerId: string | null } | null> {
    const [row] = await tx.rows<{ firmware_reported_at: Date | null; owner_id: string | null }>('SELECT firmware_reported_at, owner_id FROM devices WHERE device_id = $1 FOR UPDATE', [deviceId]);
    return row ? { firmwareReportedAt: row.firmware_reported_at, ownerId: row.owner_id } : null;
  }

  async setFirmwareVersion(tx: SqlRunner, deviceId: string, version: string, reportedAt: Date): Promise<void> {
    await tx.rows('UPDATE devices SET firmware_version = $2, firmware_reported_at = $3 WHERE device_id = $1', [deviceId, version, reportedAt]);
  }

  async seen(tx: SqlRunner, deviceId: string, at: Date): Promise<void> {
    await tx.rows('UPDATE devices SET last_seen_at = GREATEST(last_seen_at, $2) WHERE device_id = $1', [deviceId, at]);
  }
}
