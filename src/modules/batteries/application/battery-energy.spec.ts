import fc from 'fast-check';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { BatteryEnergyStore, type BatteryKey, type EnergyBucket, type StaleHours } from '../domain/battery-energy.store.js';
import { energyPerBucket, type EnergySample } from '../domain/energy.js';
import { HOUR_MS, hourlyEnergy } from './battery-energy.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 20);

/** One battery's records, answered page by page as SqlBatteryEnergyStore.samples() does (ts ≥ from, < to, oldest first, at most `limit`). */
class RecordsOfOneBattery extends BatteryEnergyStore {
  reads = 0;

  constructor(private readonly records: EnergySample[]) {
    super();
  }

  async samples(_tx: SqlRunner, _battery: BatteryKey, from: Date, to: Date, limit: number): Promise<EnergySample[]> {
    this.reads += 1;
    return this.records.filter((record) => record.ts >= from.getTime() && record.ts < to.getTime()).slice(0, limit);
  }

  transaction<T>(): Promise<T> {
    throw new Error('not used');
  }
  takeStale(): Promise<StaleHours[]> {
    throw new Error('not used');
  }
  hasStale(): Promise<boolean> {
    throw new Error('not used');
  }
  storeHours(): Promise<void> {
    throw new Error('not used');
  }
  sums(): Promise<EnergyBucket[]> {
    throw new Error('not used');
  }
}

/** Records of one battery, unique instants in time order, some far apart (gaps), some with counters. */
const aTrace = fc
  .array(
    fc.record({
      stepMs: fc.oneof(fc.integer({ min: 1, max: 10 * MINUTE }), fc.integer({ min: 10 * MINUTE, max: 40 * MINUTE })),
      current: fc.double({ min: -50, max: 50, noNaN: true }),
      voltage: fc.double({ min: 10, max: 15, noNaN: true }),
      counted: fc.boolean(),
    }),
    { minLength: 0, maxLength: 80 },
  )
  .map((steps) => {
    let ts = T0 - 20 * MINUTE;
    let counter = 0;
    return steps.map(({ stepMs, current, voltage, counted }): EnergySample => {
      counter += Math.abs(current) / 100;
      return counted ? { ts: (ts += stepMs), voltage, chargedAhTotal: counter, dischargedAhTotal: counter / 2 } : { ts: (ts += stepMs), current, voltage };
    });
  });

describe('hourlyEnergy (records read in pages)', () => {
  const battery = { deviceId: 'gw-1', batteryId: 'main' };

  it('gives, to the bit, the figures of one read of all the records, whatever the page size', async () => {
    await fc.assert(
      fc.asyncProperty(aTrace, fc.integer({ min: 2, max: 20 }), async (records, pageSize) => {
        const first = T0;
        const end = T0 + 3 * HOUR_MS;
        const paged = await hourlyEnergy(new RecordsOfOneBattery(records), {} as SqlRunner, battery, first, end, pageSize);
        expect(paged).toEqual(energyPerBucket(records, first, end, HOUR_MS));
      }),
    );
  });

  it('reads a dense hour in pages of the size given, never all at once', async () => {
    const records = Array.from({ length: 1_000 }, (_, k) => ({ ts: T0 + k * 1_000, current: k % 2 === 0 ? 5 : -5, voltage: 12 }));
    const store = new RecordsOfOneBattery(records);

    const hours = await hourlyEnergy(store, {} as SqlRunner, battery, T0, T0 + HOUR_MS, 100);

    // Pages of 100 overlapping by one record: ceil(999 / 99) reads, the last one short.
    expect(store.reads).toBe(11);
    expect(hours).toEqual(energyPerBucket(records, T0, T0 + HOUR_MS, HOUR_MS));
    expect(hours.get(T0)!.coveredMs).toBe(999_000);
  });
});
