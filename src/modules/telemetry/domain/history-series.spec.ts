import fc from 'fast-check';
import { bucketsOf, cutAtSlots, slotRecords, slotRuns, takeRecords, takeSlots, withRecordsIn, type SeriesParts } from './history-series.js';

/** Parts as the series statement returns them: slots of a few widths and raw instants, values as ingest admits them. */
const anyPart = fc.record({
  at: fc.oneof(
    fc.integer({ min: 0, max: 2_000 }).map((slot) => 1_764_979_200 + slot * 300),
    fc.integer({ min: 0, max: 600_000_000 }).map((us) => 1_764_979_200 + us / 1_000_000),
  ),
  count: fc.integer({ min: 1, max: 1_000 }),
  sum: fc.double({ min: -1e9, max: 1e9, noNaN: true }),
  low: fc.double({ min: -1e6, max: 1e6, noNaN: true }),
  spread: fc.double({ min: 0, max: 1e6, noNaN: true }),
});

function partsOf(parts: Array<{ at: number; count: number; sum: number; low: number; spread: number }>): SeriesParts {
  return {
    battery_id: 'main',
    metric: 'voltage',
    at: parts.map((part) => part.at),
    count: parts.map((part) => part.count),
    sum: parts.map((part) => part.sum),
    min: parts.map((part) => part.low),
    max: parts.map((part) => part.low + part.spread),
  };
}

describe('bucketsOf', () => {
  it('merges parts per epoch-aligned bucket, ascending, sums added in time order', () => {
    const parts: SeriesParts = {
      battery_id: 'main',
      metric: 'voltage',
      at: [1_200.5, 600, 0, 900, 1_200],
      count: [1, 10, 10, 10, 10],
      sum: [0.3, 0.1, 1, 0.2, 3],
      min: [0.3, 0.01, 0.1, 0.02, 0.2],
      max: [0.3, 0.01, 0.1, 0.02, 0.4],
    };

    expect(bucketsOf(parts, 900)).toEqual({
      battery_id: 'main',
      metric: 'voltage',
      ts: [0, 900],
      avg: [(1 + 0.1) / 20, (0.2 + 3 + 0.3) / 21],
      min: [0.01, 0.02],
      max: [0.1, 0.4],
      count: [20, 21],
    });
  });

  it('gives the same buckets, to the last bit, whatever order the parts arrive in', () => {
    fc.assert(
      fc.property(fc.array(anyPart, { minLength: 1, maxLength: 40 }), fc.constantFrom(1, 300, 900, 3_600, 86_400), fc.infiniteStream(fc.nat()), (parts, bucketSec, keys) => {
        const shuffled = parts
          .map((part) => ({ part, key: keys.next().value as number }))
          .sort((a, b) => a.key - b.key)
          .map(({ part }) => part);
        expect(bucketsOf(partsOf(shuffled), bucketSec)).toEqual(bucketsOf(partsOf(parts), bucketSec));
      }),
    );
  });

  it('answers what adding up each bucket’s parts in time order gives', () => {
    fc.assert(
      fc.property(fc.array(anyPart, { maxLength: 40 }), fc.constantFrom(300, 900, 3_600), (parts, bucketSec) => {
        const sorted = [...parts].sort((a, b) => a.at - b.at || a.sum - b.sum || a.count - b.count);
        const expected = new Map<number, { sum: number; count: number; min: number; max: number }>();
        for (const part of sorted) {
          const bucket = Math.floor(part.at / bucketSec) * bucketSec;
          const seen = expected.get(bucket);
          if (!seen) expected.set(bucket, { sum: part.sum, count: part.count, min: part.low, max: part.low + part.spread });
          else expected.set(bucket, { sum: seen.sum + part.sum, count: seen.count + part.count, min: Math.min(seen.min, part.low), max: Math.max(seen.max, part.low + part.spread) });
        }
        const buckets = [...expected.entries()].sort(([a], [b]) => a - b);
        expect(bucketsOf(partsOf(parts), bucketSec)).toEqual({
          battery_id: 'main',
          metric: 'voltage',
          ts: buckets.map(([ts]) => ts),
          avg: buckets.map(([, b]) => b.sum / b.count),
          min: buckets.map(([, b]) => b.min),
          max: buckets.map(([, b]) => b.max),
          count: buckets.map(([, b]) => b.count),
        });
      }),
    );
  });
});

describe('cutAtSlots and slotRuns: an answer cut at whole slots', () => {
  const FIRST = 1_764_979_200;

  it('parts inside the check slots become each slot\'s count; the rest stay parts, before or after', () => {
    fc.assert(
      fc.property(fc.array(anyPart, { maxLength: 80 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (given, startHour, hours) => {
        const check = { widthSec: 3600, from: FIRST + startHour * 3600, to: FIRST + (startHour + hours) * 3600 };
        const parts = partsOf(given);
        const { before, after, slots } = cutAtSlots(parts, check);

        expect(Array.from(before.at).every((at) => at < check.from)).toBe(true);
        expect(Array.from(after.at).every((at) => at >= check.to)).toBe(true);
        const inside = given.filter((part) => part.at >= check.from && part.at < check.to);
        expect(before.at.length + after.at.length + inside.length).toBe(given.length);
        const counts = new Map<number, number>();
        for (const part of inside) counts.set(Math.floor(part.at / 3600) * 3600, (counts.get(Math.floor(part.at / 3600) * 3600) ?? 0) + part.count);
        expect(slots).toEqual(counts);
        expect(bucketsOf(before, 300)).toEqual(bucketsOf(partsOf(given.filter((part) => part.at < check.from)), 300));
      }),
      { numRuns: 300 },
    );
  });

  it('slotRuns gives back the buckets, cut at slot starts, each run with the records it counts', () => {
    fc.assert(
      fc.property(fc.array(anyPart, { maxLength: 120 }), (given) => {
        const buckets = bucketsOf(partsOf(given), 300);
        const runs = [...slotRuns(buckets, 3600)];

        expect(runs.flatMap(([, { run }]) => run.ts)).toEqual(buckets.ts);
        expect(runs.flatMap(([, { run }]) => run.avg)).toEqual(buckets.avg);
        expect(runs.flatMap(([, { run }]) => run.count)).toEqual(buckets.count);
        for (const [slot, { run, count }] of runs) {
          expect(run.ts.every((ts) => ts >= slot && ts < slot + 3600)).toBe(true);
          expect(count).toBe(run.count.reduce((total, n) => total + n, 0));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('takeSlots and withRecordsIn: the edge slots of an answer, counted, then answered from their records', () => {
  const slot = 1_764_979_200;
  const parts: SeriesParts = { battery_id: 'main', metric: 'voltage', at: [slot + 300, slot, slot + 600, slot], count: [4, 7, 2, 3], sum: [1, 2, 3, 4], min: [0, 1, 2, 3], max: [2, 3, 4, 5] };

  const plain = (p: SeriesParts) => ({ ...p, at: Array.from(p.at), count: Array.from(p.count), sum: Array.from(p.sum), min: Array.from(p.min), max: Array.from(p.max) });

  it('takes the parts at the slots out and adds up their counts; the rest keeps its order', () => {
    const { rest, counts } = takeSlots(parts, [slot, slot + 900]);

    expect([...counts]).toEqual([[slot, 10]]);
    expect(plain(rest)).toEqual({ ...parts, at: [slot + 300, slot + 600], count: [4, 2], sum: [1, 3], min: [0, 2], max: [2, 4] });
    expect(takeSlots(parts, []).rest).toBe(parts);
  });

  it('adds the kept records inside the range, compared in whole microseconds, to the parts', () => {
    const record = (seconds: number, value: number) => ({ at: seconds, value });
    // 12:00:00.000001 is a double a little off; the range starts at 12:00:00.001 (ms).
    const kept = slotRecords({
      battery_id: 'main',
      metric: 'voltage',
      at: [record(slot + 0.000_999, 1), record(slot + 0.001, 2), record(slot + 17.25, 3), record(slot + 299.999_999, 4)].map((r) => r.at),
      count: [1, 1, 1, 1],
      sum: [1, 2, 3, 4],
      min: [1, 2, 3, 4],
      max: [1, 2, 3, 4],
    });
    const before: SeriesParts = { battery_id: 'main', metric: 'voltage', at: [slot + 300], count: [5], sum: [10], min: [1], max: [3] };

    const joined = withRecordsIn(before, kept, slot * 1000 + 1, (slot + 299) * 1000 + 999);

    expect(joined).toEqual({ battery_id: 'main', metric: 'voltage', at: [slot + 300, slot + 0.001, slot + 17.25], count: [5, 1, 1], sum: [10, 2, 3], min: [1, 2, 3], max: [3, 2, 3] });
    expect(withRecordsIn(before, undefined, 0, Infinity)).toBe(before);
    expect(withRecordsIn(before, kept, 0, slot * 1000)).toBe(before);
  });

  it('takes the records inside the slots out, by slot; the rest keeps its order', () => {
    const mixed: SeriesParts = { battery_id: 'main', metric: 'voltage', at: [slot + 12.5, slot + 300, slot + 3600.25, slot + 299.999_999, slot + 3300], count: [1, 6, 1, 1, 2], sum: [1, 9, 2, 3, 4], min: [1, 1, 2, 3, 1], max: [1, 2, 2, 3, 3] };

    const { rest, records } = takeRecords(mixed, [slot, slot + 3600], 300);

    expect([...records]).toEqual([
      [slot, { ts: [slot + 12.5, slot + 299.999_999], values: [1, 3] }],
      [slot + 3600, { ts: [slot + 3600.25], values: [2] }],
    ]);
    expect(plain(rest)).toEqual({ ...mixed, at: [slot + 300, slot + 3300], count: [6, 2], sum: [9, 4], min: [1, 1], max: [2, 3] });
  });

  it('refuses to keep parts that are not single records', () => {
    expect(() => slotRecords({ battery_id: 'main', metric: 'voltage', at: [slot], count: [2], sum: [3], min: [1], max: [2] })).toThrow(RangeError);
  });
});
