import type { LogLevel, LogLine, StoredLogLine } from './device-log.js';

export interface LogQuery {
  /** Lines from this instant on only (a later owner's view starts at their claim); null: all. */
  since: Date | null;
  from: Date | null;
  /** Exclusive. */
  to: Date | null;
  levels: LogLevel[] | null;
  /** Lines whose message or tag holds this text, case-insensitively. */
  text: string | null;
  /** Older than this line (the cursor's); null: from the newest. */
  before: { ts: Date; lineHash: string } | null;
  limit: number;
}

export interface StoredBatch {
  /** The lines this call inserted (a retried line is not among them). */
  inserted: LogLine[];
  duplicates: number;
  /** The device's owner as the transaction saw it, whose streams see the lines. */
  ownerId: string | null;
}

/** The device_logs and device_log_usage tables. */
export abstract class DeviceLogStore {
  /**
   * Stores the lines not stored yet and adds their bytes to the device's usage of `day`, unless that
   * usage had reached `quotaBytes` already (null then, nothing stored). One transaction.
   */
  abstract store(deviceId: string, lines: readonly LogLine[], receivedAt: Date, day: string, quotaBytes: number): Promise<StoredBatch | null>;

  /** Newest first. */
  abstract list(deviceId: string, query: LogQuery): Promise<StoredLogLine[]>;

  /** Day partitions from the retention cut-off to two days ahead exist; days wholly before it are dropped, with usage rows as old. */
  abstract maintain(now: Date, retentionDays: number): Promise<{ created: string[]; dropped: string[] }>;
}
