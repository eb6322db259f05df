import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { EnergySample, EnergyTotals } from './energy.js';

/** One battery of one device. */
export interface BatteryKey {
  deviceId: string;
  batteryId: string;
}

/** Hours (their starts, ms) of one battery whose energy must be recomputed. */
export interface StaleHours extends BatteryKey {
  hours: number[];
}

/** Which stale hours a recomputation takes: one battery's in a range, or every battery's before an instant. */
export type StaleScope = (BatteryKey & { from: Date; to: Date }) | { before: Date };

/** An energy bucket as stored or summed: its start (ms) and its totals. */
export interface EnergyBucket extends EnergyTotals {
  start: number;
}

/** Where the hourly energy of batteries lives, and the marks of the hours waiting for recomputation. */
export abstract class BatteryEnergyStore {
  /** Runs `work` in one transaction. */
  abstract transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T>;
  /**
   * Within `tx`: takes (deletes, locked until `tx` ends) up to `limit` stale hours: of one battery
   * in [from, to) (waiting for hours another transaction has taken, so the caller then reads them
   * recomputed), or of any batteries among the hours that start before `before` (skipping hours
   * another transaction has taken).
   */
  abstract takeStale(tx: SqlRunner, limit: number, scope: StaleScope): Promise<StaleHours[]>;
  /**
   * Whether any hour of the battery in [from, to) is marked stale (committed marks; no lock).
   * `mayLag`: the answer may be a few seconds old (a read replica's), like sums() with `mayLag`.
   */
  abstract hasStale(battery: BatteryKey, from: Date, to: Date, mayLag?: boolean): Promise<boolean>;
  /** Within `tx`: the oldest `limit` records of the battery in [from, to) that carry charge, oldest first. */
  abstract samples(tx: SqlRunner, battery: BatteryKey, from: Date, to: Date, limit: number): Promise<EnergySample[]>;
  /** Within `tx`: stores the hours' energy; an hour without any (no segment at all) is removed. */
  abstract storeHours(tx: SqlRunner, battery: BatteryKey, hours: EnergyBucket[]): Promise<void>;
  /** The stored hours of the battery summed into buckets of `bucketSec` aligned to the Unix epoch, in [from, to); buckets without data are absent. `mayLag`: see hasStale(). */
  abstract sums(battery: BatteryKey, from: Date, to: Date, bucketSec: number, mayLag?: boolean): Promise<EnergyBucket[]>;
}
