/** A UTC day in milliseconds: the unit of the compact layout. */
export const DAY_MS = 86_400_000;

/** A device's UTC day with records still stored as rows. */
export interface PendingDay {
  deviceId: string;
  /** The day's midnight, UTC. */
  day: Date;
}

/** Settled days moved into the compact layout (one row per device, battery and UTC day). */
export abstract class TelemetryCompactionStore {
  /** Devices with records before `before`, after `afterDeviceId` in device order, at most `limit`; with the oldest day of each. */
  abstract pending(before: Date, afterDeviceId: string | null, limit: number): Promise<PendingDay[]>;

  /** The next day of the device, from `from` on and before `before`, that has records as rows; null when none. */
  abstract nextDay(deviceId: string, from: Date, before: Date): Promise<Date | null>;

  /**
   * Compacts one device's day, merged with what an earlier compaction of it made, in one
   * transaction under the device's lock; answers the records the day holds compacted.
   */
  abstract compactDay(deviceId: string, day: Date): Promise<number>;

  /** Runs `work` only while no other instance compacts; undefined when another does. */
  abstract exclusively<T>(work: () => Promise<T>): Promise<T | undefined>;
}
