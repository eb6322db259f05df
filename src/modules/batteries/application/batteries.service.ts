import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { parseInstant } from '../../telemetry/index.js';
import type { BatteryKey } from '../domain/battery-energy.store.js';
import type { BatteryProfile, Chemistry } from '../domain/battery-profile.js';
import { BatteryProfilesStore, type BatteryOverview, type OutlierMetric } from '../domain/battery-profiles.store.js';
import { ENERGY_BUCKETS, MAX_ENERGY_POINTS, type EnergyBucketName } from '../domain/energy.js';
import { healthOf, type HealthFigures } from '../domain/health.js';
import { rankOutliers, type RankedBattery } from '../domain/outliers.js';
import { AVERAGE_WINDOW_MS, averageCurrent, timeToEmptyOrFull } from '../domain/time-to-empty.js';
import { BatteryEnergy, HOUR_MS } from './battery-energy.js';

/** The health figures read every record of the range: at most 92 days. */
export const MAX_HEALTH_RANGE_DAYS = 92;
const DAY_MS = 86_400_000;
const HEALTH_METRICS = ['soc', 'temperature', 'cellVoltageMin', 'cellVoltageMax', 'soh'] as const;

export interface EnergyPoint {
  ts: Date;
  chargedAh: number;
  dischargedAh: number;
  chargedWh: number;
  dischargedWh: number;
  /** dischargedAh ÷ the profile's capacity; null without a profile. */
  equivalentFullCycles: number | null;
  /** The share of the bucket covered by segments (0–1): the rest is gaps or time without records. */
  coverage: number;
}

export interface BatteryListing extends BatteryOverview {
  timeToEmptySec?: number;
  timeToFullSec?: number;
}

export type BatteryHealth = HealthFigures & { equivalentFullCycles: number | null };

/**
 * Where a viewer's view of the stored hours starts: the hour of the device's visible_since (a later
 * owner's view starts at the release before their claim), or the beginning for an administrator.
 */
const windowStart = (visibleSince: Date | null) => (visibleSince ? Math.floor(visibleSince.getTime() / HOUR_MS) * HOUR_MS : 0);

const instant = (value: string | undefined, field: string, fallback: Date): Date => (value === undefined ? fallback : parseInstant(value, field));

/**
 * Battery profiles and the figures derived from a battery's records: energy per bucket, ageing
 * stress, time to empty or full, and the fleet's outliers. Who may ask is the caller's check
 * (the controllers): these take a device the caller may see, and the start of what they may see
 * of it (visibleSince; null: everything). Energy counts whole stored hours, from the hour of
 * visibleSince on; health reads the records from visibleSince itself.
 */
@Injectable()
export class BatteriesService {
  constructor(
    private readonly profiles: BatteryProfilesStore,
    private readonly energy: BatteryEnergy,
    private readonly clock: Clock,
  ) {}

  putProfile(battery: BatteryKey, profile: { name: string; chemistry: Chemistry; nominalVoltage: number; capacityAh: number }): Promise<BatteryProfile> {
    return this.profiles.put(battery, { ...profile, name: profile.name.trim() }, this.clock.now());
  }

  /** Every battery of the device, with time to empty or full where the profile and the records tell. */
  async list(deviceId: string): Promise<BatteryListing[]> {
    const batteries = await this.profiles.overview(deviceId);
    return Promise.all(
      batteries.map(async (battery): Promise<BatteryListing> => {
        const newestCurrent = battery.latest.current;
        const soc = battery.latest.soc?.value ?? null;
        if (!battery.profile || !newestCurrent || soc === null) return battery;
        const records = await this.profiles.series({ deviceId, batteryId: battery.batteryId }, new Date(newestCurrent.ts.getTime() - AVERAGE_WINDOW_MS), new Date(newestCurrent.ts.getTime() + 1), ['current']);
        return { ...battery, ...timeToEmptyOrFull(battery.profile.capacityAh, soc, averageCurrent(records)) };
      }),
    );
  }

  /**
   * Energy per bucket over [from, to), both widened to the bucket's edges; default the last 30
   * days in daily buckets. Every bucket of the range is answered, those without data at 0.
   */
  async energyOf(battery: BatteryKey, query: { from?: string; to?: string; bucket?: string }, visibleSince: Date | null): Promise<{ bucketSeconds: number; points: EnergyPoint[] }> {
    const bucketName = (query.bucket ?? '1d') as EnergyBucketName;
    const bucketSeconds = ENERGY_BUCKETS[bucketName];
    if (bucketSeconds === undefined) throw new ValidationFailedError([{ field: 'bucket', message: `bucket must be one of ${Object.keys(ENERGY_BUCKETS).join(', ')}` }]);
    const bucketMs = bucketSeconds * 1000;
    const now = this.clock.now();
    const to = instant(query.to, 'to', now);
    const from = instant(query.from, 'from', new Date(to.getTime() - 30 * DAY_MS));
    if (from >= to) throw new ValidationFailedError([{ field: 'from', message: 'from must be before to' }]);
    const start = Math.floor(from.getTime() / bucketMs) * bucketMs;
    const end = Math.ceil(to.getTime() / bucketMs) * bucketMs;
    if ((end - start) / bucketMs > MAX_ENERGY_POINTS) throw new ValidationFailedError([{ field: 'bucket', message: `the range holds more than ${MAX_ENERGY_POINTS} buckets of ${bucketName}: choose a larger bucket or a shorter range` }]);
    const [sums, profile] = await Promise.all([this.energy.buckets(battery, new Date(Math.max(start, windowStart(visibleSince))), new Date(end), bucketSeconds), this.profiles.get(battery)]);
    const byStart = new Map(sums.map((sum) => [sum.start, sum]));
    const points: EnergyPoint[] = [];
    for (let at = start; at < end; at += bucketMs) {
      const sum = byStart.get(at);
      const dischargedAh = sum?.dischargedAh ?? 0;
      points.push({
        ts: new Date(at),
        chargedAh: sum?.chargedAh ?? 0,
        dischargedAh,
        chargedWh: sum?.chargedWh ?? 0,
        dischargedWh: sum?.dischargedWh ?? 0,
        equivalentFullCycles: profile ? dischargedAh / profile.capacityAh : null,
        coverage: (sum?.coveredMs ?? 0) / bucketMs,
      });
    }
    return { bucketSeconds, points };
  }

  /**
   * The ageing figures over [from, to); default the last 30 days, at most MAX_HEALTH_RANGE_DAYS.
   * equivalentFullCycles counts the discharge of the whole hours the range touches (the stored hours).
   */
  async healthOf(battery: BatteryKey, query: { from?: string; to?: string }, visibleSince: Date | null): Promise<BatteryHealth> {
    const now = this.clock.now();
    const to = instant(query.to, 'to', now);
    const from = instant(query.from, 'from', new Date(to.getTime() - 30 * DAY_MS));
    if (from >= to) throw new ValidationFailedError([{ field: 'from', message: 'from must be before to' }]);
    if (to.getTime() - from.getTime() > MAX_HEALTH_RANGE_DAYS * DAY_MS) throw new ValidationFailedError([{ field: 'to', message: `the range may span at most ${MAX_HEALTH_RANGE_DAYS} days` }]);
    const hourAligned = { from: Math.max(Math.floor(from.getTime() / HOUR_MS) * HOUR_MS, windowStart(visibleSince)), to: Math.ceil(to.getTime() / HOUR_MS) * HOUR_MS };
    const [records, profile, hours] = await Promise.all([
      this.profiles.series(battery, visibleSince && visibleSince > from ? visibleSince : from, to, HEALTH_METRICS),
      this.profiles.get(battery),
      this.energy.buckets(battery, new Date(hourAligned.from), new Date(hourAligned.to), 3600),
    ]);
    const dischargedAh = hours.reduce((sum, hour) => sum + hour.dischargedAh, 0);
    return { ...healthOf(records), equivalentFullCycles: profile ? dischargedAh / profile.capacityAh : null };
  }

  /** Every profiled battery with the data for `metric`, ranked (rankOutliers). */
  async outliers(metric: OutlierMetric): Promise<RankedBattery[]> {
    return rankOutliers(await this.profiles.fleetFigures(metric, this.clock.now()));
  }
}
