import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/**
 * What a device reports of itself (its firmware, that it was heard from), written in the
 * transaction of the report with the device's row locked: a retried, late or concurrent report
 * can neither lose nor reorder another (the OTA event batches).
 */
export abstract class DeviceReports {
  /** Locks the device's row until `tx` ends; null when there is no such device. */
  abstract lock(tx: SqlRunner, deviceId: string): Promise<{ firmwareReportedAt: Date | null; ownerId: string | null } | null>;

  abstract setFirmwareVersion(tx: SqlRunner, deviceId: string, version: string, reportedAt: Date): Promise<void>;

  /** last_seen_at only moves forward, so a report that commits late never moves it back. */
  abstract seen(tx: SqlRunner, deviceId: string, at: Date): Promise<void>;
}
