import fc from 'fast-check';
import { toSeries, type History } from '../application/telemetry-history.service.js';
import { ascendingByTs, runsOf } from '../domain/history-series.js';
import type { BucketColumns, SeriesRow } from '../domain/telemetry-history.queries.js';
import { TelemetryHistoryResponse } from './telemetry-history.dto.js';
import { historyBody, historyJson, SecondsFormatter } from './history-json.js';

const BUCKETS = [1, 60, 300, 900, 3600, 21_600, 86_400, 7 * 86_400];
/** Metric values as ingest admits them (0, or a magnitude from 1e-12 to 1e12), and what aggregating them gives. */
const anyValue = fc.oneof(fc.constant(0), fc.double({ min: 1e-12, max: 1e12, noNaN: true }), fc.double({ min: -1e12, max: -1e-12, noNaN: true }), fc.integer({ min: -1000, max: 1000 }));

// Built once: a stringMatching arbitrary parses its pattern when made, which per generated answer
// (anyBucketAnswer's chain) cost more than the rest of the test.
const anyMetric = fc.stringMatching(/^[a-z][a-z0-9_.]{0,15}$/);
const anyBatteryId = fc.stringMatching(/^[A-Za-z0-9._:-]{1,12}$/);
const anyDeviceId = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);

/** A series as the query returns it: distinct bucket starts, epoch-aligned, in any order. */
const anySeriesRow = (bucketSec: number) =>
  fc
    .record({
      metric: anyMetric,
      battery_id: anyBatteryId,
      first: fc.integer({ min: 0, max: Math.floor(4_102_444_800 / bucketSec) - 700 }),
      // Per point: its slot after `first` (distinct), avg, min, max and count.
      points: fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 600 }), anyValue, anyValue, anyValue, fc.integer({ min: 1, max: 100_000 })), {
        maxLength: 60,
        selector: ([slot]) => slot,
      }),
    })
    .map(({ metric, battery_id, first, points }): SeriesRow => ({
      metric,
      battery_id,
      ts: points.map(([slot]) => (first + slot) * bucketSec),
      avg: points.map((point) => point[1]),
      min: points.map((point) => point[2]),
      max: points.map((point) => point[3]),
      count: points.map((point) => point[4]),
    }));

const anyBucketAnswer = fc.constantFrom(...BUCKETS).chain((bucketSec) =>
  fc.record({
    bucketSec: fc.constant(bucketSec),
    deviceId: anyDeviceId,
    from: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }),
    rows: fc.array(anySeriesRow(bucketSec), { maxLength: 4 }),
  }),
);

describe('historyJson: the JSON text of a history answer', () => {
  it('is byte for byte JSON.stringify of the response object, for any bucket answer', () => {
    fc.assert(
      fc.property(anyBucketAnswer, ({ bucketSec, deviceId, from, rows }) => {
        const history: History = { kind: 'buckets', deviceId, from, to: new Date(from.getTime() + 86_400_000), bucketSec, series: toSeries(rows.map((row) => runsOf(row, bucketSec))).series, etag: null };
        expect(historyJson(history)).toBe(JSON.stringify(TelemetryHistoryResponse.from(history)));
      }),
      { numRuns: 300 },
    );
  });

  it('writes a series held in several runs as one array of points, the same bytes however it is cut, as text or bytes, also when a kept run is written again, with the same tag', () => {
    fc.assert(
      fc.property(anyBucketAnswer, fc.array(fc.nat(), { maxLength: 6 }), ({ bucketSec, deviceId, from, rows }, cuts) => {
        const whole = rows.map((row) => runsOf(row, bucketSec));
        const cut = whole.map(({ runs: [run], ...series }) => {
          const at = [...new Set(cuts.map((n) => n % (run.ts.length + 1)))].sort((a, b) => a - b);
          const pieces = [0, ...at, run.ts.length].slice(1).map((end, k, ends) => {
            const start = k === 0 ? 0 : ends[k - 1];
            return { ts: run.ts.slice(start, end), avg: run.avg.slice(start, end), min: run.min.slice(start, end), max: run.max.slice(start, end), count: run.count.slice(start, end) };
          });
          return { ...series, runs: [{ ts: [], avg: [], min: [], max: [], count: [] }, ...pieces] };
        });
        const answer = (series: typeof whole): History => ({ kind: 'buckets', deviceId, from, to: new Date(from.getTime() + 86_400_000), bucketSec, series: toSeries(series).series, etag: null });
        const expected = historyJson(answer(whole));

        expect(historyJson(answer(cut))).toBe(expected);
        expect(historyJson(answer(cut))).toBe(expected);
        expect(historyBody(answer(cut)).equals(Buffer.from(expected))).toBe(true);
        for (const series of cut) for (const run of series.runs as BucketColumns[]) run.shared = true;
        expect(historyBody(answer(cut)).toString()).toBe(expected);
        expect(historyBody(answer(cut)).toString()).toBe(expected);
        expect(toSeries(cut, 'question').tag).toBe(toSeries(whole, 'question').tag);
      }),
      { numRuns: 300 },
    );
  });

  it('writes the points ascending by ts whatever order the query gave', () => {
    const row: SeriesRow = { metric: 'soc', battery_id: 'main', ts: [1_800, 600, 1_200], avg: [3, 1, 2], min: [3, 1, 2], max: [3, 1, 2], count: [1, 1, 1] };
    const history: History = { kind: 'buckets', deviceId: 'gw-1', from: new Date(0), to: new Date(3_600_000), bucketSec: 600, series: toSeries([runsOf(row, 600)]).series, etag: null };

    const body = JSON.parse(historyJson(history)) as { series: { points: { ts: string; avg: number }[] }[] };

    expect(body.series[0].points).toEqual([
      { ts: '1970-01-01T00:10:00.000Z', avg: 1, min: 1, max: 1, count: 1 },
      { ts: '1970-01-01T00:20:00.000Z', avg: 2, min: 2, max: 2, count: 1 },
      { ts: '1970-01-01T00:30:00.000Z', avg: 3, min: 3, max: 3, count: 1 },
    ]);
  });

  it('raw answers: JSON.stringify of the response object', () => {
    const history: History = {
      kind: 'raw',
      deviceId: 'gw-1',
      from: new Date(0),
      to: new Date(60_000),
      records: [{ battery_id: 'main', ts: new Date(1_000), metrics: { soc: 50.5 } }],
      nextCursor: 'abc',
    };

    expect(historyJson(history)).toBe(JSON.stringify(TelemetryHistoryResponse.from(history)));
  });
});

describe('SecondsFormatter', () => {
  it('writes whole seconds as Date#toISOString does, in any order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -62_135_596_800, max: 253_402_300_799 }), { maxLength: 50 }), (seconds) => {
        const formatter = new SecondsFormatter();
        expect(seconds.map((value) => formatter.format(value))).toEqual(seconds.map((value) => new Date(value * 1000).toISOString()));
      }),
    );
  });

  it('falls back to Date for fractions of a second', () => {
    expect(new SecondsFormatter().format(1.5)).toBe('1970-01-01T00:00:01.500Z');
  });
});

describe('ascendingByTs', () => {
  it('orders any bucket starts, aligned or not, as a comparison sort does', () => {
    fc.assert(
      fc.property(fc.constantFrom(...BUCKETS), fc.uniqueArray(fc.integer({ min: 0, max: 1_000_000_000 }), { maxLength: 80 }), fc.boolean(), (bucketSec, raw, aligned) => {
        const ts = aligned ? raw.map((value) => value * bucketSec) : raw;
        const expected = [...ts.keys()].sort((a, b) => ts[a] - ts[b]);
        expect([...ascendingByTs(ts, bucketSec)]).toEqual(expected);
      }),
    );
  });
});
