import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Env } from '../../../config/env.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { BatteryEnergyStore, type BatteryKey, type EnergyBucket, type StaleHours } from '../domain/battery-energy.store.js';
import { energyPerBucket, MAX_SEGMENT_MS, type EnergyTotals } from '../domain/energy.js';

export const HOUR_MS = 3_600_000;

/** How often the background recomputation looks for stale hours. */
const RECOMPUTE_INTERVAL_MS = 10_000;
/**
 * The background recomputes an hour only once no record of the current time can reach it: it ended
 * more than 15 minutes (a segment's reach) ago. An hour still filling would otherwise be read whole
 * again on every pass, for as long as it fills (a fleet's work growing with its hours' records,
 * not with what arrives); a read recomputes such an hour itself.
 */
const SETTLED_AFTER_MS = HOUR_MS + 15 * 60_000;
/** Stale hours taken per transaction: short transactions, so ingest never waits long on a mark. */
const TAKE_PER_TRANSACTION = 200;
/**
 * Stale hours of one battery are read in runs: one read for hours at most this far apart, and at
 * most a run this long, so a backlog of a year is read a day at a time (8,640 records of a
 * 10-second gateway) rather than all at once.
 */
const MAX_RUN_MS = 24 * HOUR_MS;
/**
 * Records read per page while recomputing: memory stays bounded (a few MB) however densely a
 * gateway filled its hours (the rate limit allows 500-record uploads, two a second).
 */
export const SAMPLES_PER_READ = 10_000;

/**
 * The energy per hour of [first, end) (hour edges) from the battery's records, read in pages of
 * `pageSize`: each page after the first starts with the last record of the one before, so every
 * segment between consecutive records is counted once, in time order, as from one read.
 */
export async function hourlyEnergy(store: BatteryEnergyStore, tx: SqlRunner, battery: BatteryKey, first: number, end: number, pageSize = SAMPLES_PER_READ): Promise<Map<number, EnergyTotals>> {
  const hours = new Map<number, EnergyTotals>();
  // Segments reach at most MAX_SEGMENT_MS beyond the hours they cross.
  const to = new Date(end + MAX_SEGMENT_MS);
  let from = new Date(first - MAX_SEGMENT_MS);
  for (;;) {
    const page = await store.samples(tx, battery, from, to, pageSize);
    energyPerBucket(page, first, end, HOUR_MS, hours);
    if (page.length < pageSize) return hours;
    from = new Date(page[page.length - 1].ts);
  }
}

/**
 * Keeps `battery_energy_1h` equal to what energyPerBucket computes from the stored records. The
 * ingest statement marks the hours a record can change; this recomputes each marked hour from all
 * its records (never by adding differences, so late and out-of-order batches give exactly the
 * figures in-order ones give): before every read of a battery's energy for the hours it reads, so
 * an answer never misses a stored record, and in the background every 10 s for settled hours (late
 * uploads, and each hour once it has ended), on any instance (marks are taken with SKIP LOCKED).
 */
@Injectable()
export class BatteryEnergy implements OnApplicationBootstrap {
  private readonly logger = new Logger(BatteryEnergy.name);
  private running: Promise<number> | null = null;
  private queued: Promise<number> | null = null;

  constructor(
    private readonly store: BatteryEnergyStore,
    private readonly scheduler: SchedulerRegistry,
    private readonly env: Env,
  ) {}

  /** Off with BATTERY_ANALYTICS_ENABLED=false (the benchmark's comparison): the ingest then marks nothing either. */
  onApplicationBootstrap(): void {
    if (this.env.BATTERY_ANALYTICS_ENABLED) this.scheduler.addInterval('battery-energy', setInterval(() => void this.drain(), RECOMPUTE_INTERVAL_MS));
  }

  /**
   * Recomputes every settled hour marked stale before the call; the number of hours. One pass at a time per
   * instance: a call during a pass waits for it and then for one more (shared by every such call),
   * since the running pass may have missed marks made after it began.
   */
  drain(): Promise<number> {
    if (!this.running) return this.startPass();
    this.queued ??= this.running.then(() => {
      this.queued = null;
      return this.startPass();
    });
    return this.queued;
  }

  private startPass(): Promise<number> {
    this.running = this.drainAll().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /**
   * The battery's energy in buckets of `bucketSec` over [from, to) (aligned to the buckets), fresh:
   * the range's marked hours are recomputed first. Without marks (the common case) that is one
   * read, without a transaction; a mark being taken by the background is still seen (its deletion
   * is not committed), and taking it then waits for that pass.
   *
   * Without marks the answer may be a few seconds old (a read replica's, whose marks and hours are
   * of the same moment). With marks the hours are recomputed on the primary and read back from it:
   * a replica might not have the recomputed hours yet.
   */
  async buckets(battery: BatteryKey, from: Date, to: Date, bucketSec: number): Promise<EnergyBucket[]> {
    if (!(await this.store.hasStale(battery, from, to, true))) return this.store.sums(battery, from, to, bucketSec, true);
    while (await this.store.hasStale(battery, from, to)) {
      const taken = await this.store.transaction(async (tx) => {
        const stale = await this.store.takeStale(tx, TAKE_PER_TRANSACTION, { ...battery, from, to });
        await this.recompute(tx, stale);
        return stale.reduce((sum, entry) => sum + entry.hours.length, 0);
      });
      if (taken < TAKE_PER_TRANSACTION) break;
    }
    return this.store.sums(battery, from, to, bucketSec);
  }

  private async drainAll(): Promise<number> {
    let total = 0;
    const before = new Date(Date.now() - SETTLED_AFTER_MS);
    try {
      for (;;) {
        const taken = await this.store.transaction(async (tx) => {
          const stale = await this.store.takeStale(tx, TAKE_PER_TRANSACTION, { before });
          await this.recompute(tx, stale);
          return stale.reduce((sum, entry) => sum + entry.hours.length, 0);
        });
        total += taken;
        if (taken < TAKE_PER_TRANSACTION) return total;
      }
    } catch (error) {
      // The marks of a failed transaction are back: the next round takes them again.
      this.logger.warn({ code: (error as { code?: unknown }).code }, 'Battery energy recomputation failed; trying again at the next interval');
      return total;
    }
  }

  /** Within `tx`: recomputes the stale hours from the records, each run of nearby hours with one read. */
  private async recompute(tx: SqlRunner, stale: StaleHours[]): Promise<void> {
    for (const { deviceId, batteryId, hours } of stale) {
      const battery = { deviceId, batteryId };
      for (const run of runsOf(hours)) {
        const computed = await hourlyEnergy(this.store, tx, battery, run[0], run[run.length - 1] + HOUR_MS);
        await this.store.storeHours(
          tx,
          battery,
          run.map((start) => ({ start, ...computed.get(start)! })),
        );
      }
    }
  }
}

/** Sorted hours in runs that span less than MAX_RUN_MS each. */
function runsOf(hours: number[]): number[][] {
  const runs: number[][] = [];
  for (const hour of [...hours].sort((a, b) => a - b)) {
    const run = runs[runs.length - 1];
    if (run && hour - run[0] < MAX_RUN_MS) run.push(hour);
    else runs.push([hour]);
  }
  return runs;
}
