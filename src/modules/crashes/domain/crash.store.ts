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
  /** Stores the report unless the device sent one with this crash id already; the group either way, and whether it was new. */
  abstract store(deviceId: string, report: CrashReport, receivedAt: Date): Promise<{ groupId: string; created: boolean }>;

  /** A device's reports, newest first (gateway time). */
  abstract ofDevice(deviceId: string, page: CrashPage): Promise<StoredCrash[]>;

  /** Every group, by devices affected (then reports, then the latest), from `offset`. */
  abstract groups(offset: number, limit: number): Promise<CrashGroup[]>;

  abstract group(groupId: string): Promise<CrashGroup | null>;

  /** The group's latest reports. */
  abstract samples(groupId: string, limit: number): Promise<StoredCrash[]>;
}
