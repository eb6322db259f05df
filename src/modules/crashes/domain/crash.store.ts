import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { CrashGroup, CrashReport, StoredCrash } from './crash-report.js';

export interface CrashPage {
  /** Reports from this instant on only (a later owner's view starts at their claim); null: all. */
  since: Date | null;
  /** Older than this report (the cursor's); null: from the newest. */
  before: { ts: Date; crashId: string } | null;
  limit: number;
}

/** The device_crashes table, and the groups computed from it. */
export abstract class CrashStore {
  /**
   * Stores the report unless the device sent one with this crash id already; the group either way,
   * and whether it was new. `onCreated` runs in the insert's transaction, with the device's owner.
   */
  abstract store(
    deviceId: string,
    report: CrashReport,
    receivedAt: Date,
    onCreated: (tx: SqlRunner, stored: { groupId: string; ownerId: string | null }) => Promise<void>,
  ): Promise<{ groupId: string; created: boolean }>;

  /** How many of the device's reports with a crash reset reason (CRASH_REASONS) arrived after `since`. */
  abstract crashesReceivedAfter(deviceId: string, since: Date): Promise<number>;

  /** A device's reports, newest first (gateway time). */
  abstract ofDevice(deviceId: string, page: CrashPage): Promise<StoredCrash[]>;

  /** Every group, by devices affected (then reports, then the latest), from `offset`. */
  abstract groups(offset: number, limit: number): Promise<CrashGroup[]>;

  abstract group(groupId: string): Promise<CrashGroup | null>;

  /** The group's latest reports. */
  abstract samples(groupId: string, limit: number): Promise<StoredCrash[]>;
}
