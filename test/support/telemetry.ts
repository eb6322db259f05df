import type pg from 'pg';
import type { components, paths } from '@device-cloud/client';
import { bearer } from './builders.js';
import type { ApiClient } from './create-test-app.js';

/**
 * A record as a gateway sends it. batteryId is optional (default 'main'); the generated client
 * marks it required only because openapi-typescript treats a property with a default as present.
 */
export type TelemetryRecordBody = Omit<components['schemas']['TelemetryRecordRequest'], 'batteryId'> & { batteryId?: string };
type IngestBody = components['schemas']['IngestTelemetryRequest'];
export type IngestResult = components['schemas']['IngestTelemetryResponse'];
export type HistoryQuery = NonNullable<paths['/api/v1/dashboard/devices/{deviceId}/telemetry/history']['get']['parameters']['query']>;
export type HistoryBody = components['schemas']['TelemetryHistoryResponse'];

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** POST /api/v1/telemetry with a device access token. */
export function ingest(api: ApiClient, deviceAccessToken: string, records: TelemetryRecordBody[]) {
  return api.POST('/api/v1/telemetry', { body: { records } as IngestBody, headers: bearer(deviceAccessToken) });
}

/** Ingests any number of records in batches of 500; fails the test unless every record is stored as new. */
export async function ingestAll(api: ApiClient, deviceAccessToken: string, records: TelemetryRecordBody[]): Promise<void> {
  for (let start = 0; start < records.length; start += 500) {
    const batch = records.slice(start, start + 500);
    const { data, response } = await ingest(api, deviceAccessToken, batch);
    if (response.status !== 200 || data?.accepted !== batch.length) {
      throw new Error(`ingest of records ${start}…${start + batch.length - 1} answered ${response.status} ${JSON.stringify(data)}`);
    }
  }
}

/** POST /api/v1/telemetry with a body sent exactly as given. */
export function ingestRaw(api: ApiClient, deviceAccessToken: string | undefined, raw: string) {
  return api.POST('/api/v1/telemetry', {
    body: {} as IngestBody,
    bodySerializer: () => raw,
    headers: { 'content-type': 'application/json', ...(deviceAccessToken === undefined ? {} : bearer(deviceAccessToken)) },
  });
}

export function history(api: ApiClient, headers: { authorization: string; 'if-none-match'?: string } | undefined, deviceId: string, query: HistoryQuery = {}) {
  return api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', { params: { path: { deviceId }, query }, headers });
}

export interface TelemetryRow {
  device_id: string;
  battery_id: string;
  ts: Date;
  metrics: Record<string, number>;
  received_at: Date;
}

export interface RollupRow {
  battery_id: string;
  metric: string;
  bucket: Date;
  count: number;
  sum: number;
  min: number;
  max: number;
}

export interface LatestRow {
  battery_id: string;
  metric: string;
  ts: Date;
  value: number;
}

/** The device's telemetry rows, by ts then battery. */
export async function telemetryRows(db: pg.Pool, deviceId: string): Promise<TelemetryRow[]> {
  const { rows } = await db.query<TelemetryRow>('SELECT device_id, battery_id, ts, metrics, received_at FROM telemetry WHERE device_id = $1 ORDER BY ts, battery_id', [
    deviceId,
  ]);
  return rows;
}

const rollupOrder = (row: RollupRow) => `${row.bucket.toISOString()}|${row.battery_id}|${row.metric}`;
const byRollupKey = (a: RollupRow, b: RollupRow) => (rollupOrder(a) < rollupOrder(b) ? -1 : rollupOrder(a) > rollupOrder(b) ? 1 : 0);

/** The rollup levels and their tables, finest first. */
export const ROLLUP_LEVELS = { '5m': { table: 'telemetry_rollup_5m', widthMs: 300_000 }, '1h': { table: 'telemetry_rollup_1h', widthMs: 3_600_000 }, '6h': { table: 'telemetry_rollup_6h', widthMs: 21_600_000 }, '1d': { table: 'telemetry_rollup_1d', widthMs: 86_400_000 } } as const;
export type RollupLevel = keyof typeof ROLLUP_LEVELS;
export type RollupLevels = Record<RollupLevel, RollupRow[]>;

/** The device's rows at every rollup level, sum rounded to 9 decimals (PostgreSQL adds in another order than JavaScript). */
export async function rollupRows(db: pg.Pool, deviceId: string): Promise<RollupLevels> {
  const levels = {} as RollupLevels;
  for (const [level, { table }] of Object.entries(ROLLUP_LEVELS) as Array<[RollupLevel, { table: string }]>) {
    const { rows } = await db.query<RollupRow>(`SELECT battery_id, metric, bucket, count, sum, min, max FROM ${table} WHERE device_id = $1`, [deviceId]);
    levels[level] = rows.map((row) => ({ ...row, sum: round9(row.sum) })).sort(byRollupKey);
  }
  return levels;
}

function round9(value: number): number {
  return Math.round(value * 1e9) / 1e9;
}

export async function latestRows(db: pg.Pool, deviceId: string): Promise<LatestRow[]> {
  const { rows } = await db.query<LatestRow>('SELECT battery_id, metric, ts, value FROM device_latest_metrics WHERE device_id = $1 ORDER BY battery_id, metric', [
    deviceId,
  ]);
  return rows;
}

/** Row counts of every telemetry table, to show that a refused request wrote nothing. */
export async function telemetryCounts(db: pg.Pool): Promise<{ telemetry: number; rollup: number; latest: number }> {
  const { rows } = await db.query<{ telemetry: number; rollup: number; latest: number }>(
    `SELECT (SELECT count(*)::int FROM telemetry) AS telemetry,
            (SELECT count(*)::int FROM telemetry_rollup_5m) + (SELECT count(*)::int FROM telemetry_rollup_1h) + (SELECT count(*)::int FROM telemetry_rollup_6h) + (SELECT count(*)::int FROM telemetry_rollup_1d) AS rollup,
            (SELECT count(*)::int FROM device_latest_metrics) AS latest`,
  );
  return rows[0];
}

/** What every rollup level must hold for these records: count/sum/min/max per (slot, battery, metric), ordered like rollupRows. */
export function expectedRollup(records: TelemetryRecordBody[]): RollupLevels {
  const levels = {} as RollupLevels;
  for (const [level, { widthMs }] of Object.entries(ROLLUP_LEVELS) as Array<[RollupLevel, { widthMs: number }]>) {
    const slots = new Map<string, RollupRow>();
    for (const record of records) {
      const at = Date.parse(record.ts);
      const bucket = new Date(Math.floor(at / widthMs) * widthMs);
      const batteryId = record.batteryId ?? 'main';
      for (const [metric, value] of Object.entries(record.metrics)) {
        const key = `${bucket.toISOString()}|${batteryId}|${metric}`;
        const slot = slots.get(key);
        if (slot) {
          slot.count += 1;
          slot.sum += value;
          slot.min = Math.min(slot.min, value);
          slot.max = Math.max(slot.max, value);
        } else {
          slots.set(key, { battery_id: batteryId, metric, bucket, count: 1, sum: value, min: value, max: value });
        }
      }
    }
    levels[level] = [...slots.values()].map((row) => ({ ...row, sum: round9(row.sum) })).sort(byRollupKey);
  }
  return levels;
}

export type SeriesBody = components['schemas']['SeriesResponse'];

export interface BucketOptions {
  from: number;
  to: number;
  bucketSec: number;
  metrics?: string[];
  batteryId?: string;
}

const bySeriesKey = (a: { metric: string; batteryId: string }, b: { metric: string; batteryId: string }) =>
  a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : a.batteryId < b.batteryId ? -1 : a.batteryId > b.batteryId ? 1 : 0;

/**
 * The series the history must answer, computed here from the records themselves: records with
 * from ≤ ts < to, grouped per (metric, battery) into buckets starting at floor(ts / bucket) * bucket
 * (epoch-aligned), with avg/min/max/count; empty buckets absent; ordered by metric, then battery.
 */
export function expectedSeries(records: TelemetryRecordBody[], options: BucketOptions): SeriesBody[] {
  const bucketMs = options.bucketSec * 1000;
  const series = new Map<string, { metric: string; batteryId: string; buckets: Map<number, number[]> }>();
  for (const record of records) {
    const at = Date.parse(record.ts);
    const batteryId = record.batteryId ?? 'main';
    if (at < options.from || at >= options.to) continue;
    if (options.batteryId !== undefined && batteryId !== options.batteryId) continue;
    for (const [metric, value] of Object.entries(record.metrics)) {
      if (options.metrics && !options.metrics.includes(metric)) continue;
      const key = `${metric}|${batteryId}`;
      const entry = series.get(key) ?? { metric, batteryId, buckets: new Map<number, number[]>() };
      series.set(key, entry);
      const bucket = Math.floor(at / bucketMs) * bucketMs;
      entry.buckets.set(bucket, [...(entry.buckets.get(bucket) ?? []), value]);
    }
  }
  return [...series.values()]
    .map(({ metric, batteryId, buckets }) => ({
      metric,
      batteryId,
      points: [...buckets.entries()]
        .sort(([a], [b]) => a - b)
        .map(([bucket, values]) => ({
          ts: iso(bucket),
          avg: values.reduce((sum, value) => sum + value, 0) / values.length,
          min: Math.min(...values),
          max: Math.max(...values),
          count: values.length,
        })),
    }))
    .sort(bySeriesKey);
}

/** Asserts the answered series equal the expected ones: every point, avg to 9 decimals. The order of the series is not part of the contract. */
export function expectSeries(actual: SeriesBody[], expected: SeriesBody[]): void {
  const answered = [...actual].sort(bySeriesKey);
  const withoutAvg = (list: SeriesBody[]) => list.map((series) => ({ ...series, points: series.points.map(({ avg: _avg, ...point }) => point) }));
  expect(withoutAvg(answered)).toEqual(withoutAvg(expected));
  answered.forEach((series, i) =>
    series.points.forEach((point, j) => {
      expect(point.avg).toBeCloseTo(expected[i].points[j].avg, 9);
    }),
  );
}
