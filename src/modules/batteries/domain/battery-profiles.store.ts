import type { BatteryKey } from './battery-energy.store.js';
import type { BatteryProfile } from './battery-profile.js';
import type { BatteryFigure } from './outliers.js';

export type OutlierMetric = 'cellImbalance' | 'sohDecline' | 'selfDischarge';

/** The batteries a device has reported, with the profile where one is set and the newest value of each metric. */
export interface BatteryOverview {
  batteryId: string;
  profile: BatteryProfile | null;
  latest: Record<string, { value: number; ts: Date }>;
}

/** Battery profiles, and what the batteries module reads of the fleet's telemetry. */
export abstract class BatteryProfilesStore {
  /** Creates or replaces the profile; the stored one. */
  abstract put(battery: BatteryKey, profile: Omit<BatteryProfile, 'updatedAt'>, now: Date): Promise<BatteryProfile>;
  abstract get(battery: BatteryKey): Promise<BatteryProfile | null>;
  /** Every battery of the device that has a profile or has sent a record, by battery id. */
  abstract overview(deviceId: string): Promise<BatteryOverview[]>;
  /** The records of the battery in [from, to), oldest first: the metrics `names` only, each record that has any of them. */
  abstract series(battery: BatteryKey, from: Date, to: Date, names: readonly string[]): Promise<Array<{ ts: number } & Record<string, number>>>;
  /** Every profiled battery's figure of `metric` as of `now` (batteries without the data left out). */
  abstract fleetFigures(metric: OutlierMetric, now: Date): Promise<BatteryFigure[]>;
}
