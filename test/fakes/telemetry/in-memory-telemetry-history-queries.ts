import { TelemetryHistoryQueries, type RawRecordRow, type RawRecordsQuery, type RecordExport, type RecordExportQuery, type SeriesQuery, type SeriesRuns } from '../../../src/modules/telemetry/index.js';

interface StoredRecord extends RawRecordRow {
  device_id: string;
}

/**
 * History answered from records in memory by aggregating them directly (what the rollup levels
 * must equal). Series points come back newest first, since the statement promises no order; every
 * query is remembered.
 */
export class InMemoryTelemetryHistoryQueries extends TelemetryHistoryQueries {
  private readonly records: StoredRecord[] = [];
  readonly seriesQueries: SeriesQuery[] = [];
  readonly rawQueries: RawRecordsQuery[] = [];
  readonly exportQueries: RecordExportQuery[] = [];
  /** Exports opened and not closed yet: what would hold database connections. */
  openExports = 0;

  add(deviceId: string, ...records: Array<{ ts: Date; batteryId: string; metrics: Record<string, number> }>): void {
    for (const record of records) this.records.push({ device_id: deviceId, battery_id: record.batteryId, ts: record.ts, metrics: record.metrics });
  }

  async series(query: SeriesQuery): Promise<SeriesRuns[]> {
    this.seriesQueries.push(query);
    const bucketMs = query.bucketSec * 1000;
    const series = new Map<string, { battery_id: string; metric: string; buckets: Map<number, number[]> }>();
    for (const record of this.inRange(query)) {
      for (const [metric, value] of Object.entries(record.metrics)) {
        if (query.metrics !== null && !query.metrics.includes(metric)) continue;
        const key = `${metric}\u0000${record.battery_id}`;
        const entry = series.get(key) ?? { battery_id: record.battery_id, metric, buckets: new Map<number, number[]>() };
        series.set(key, entry);
        const bucket = Math.floor(record.ts.getTime() / bucketMs) * bucketMs;
        entry.buckets.set(bucket, [...(entry.buckets.get(bucket) ?? []), value]);
      }
    }
    return [...series.values()]
      .sort((a, b) => (a.metric === b.metric ? compare(a.battery_id, b.battery_id) : compare(a.metric, b.metric)))
      .map(({ battery_id, metric, buckets }) => {
        const points = [...buckets.entries()].sort(([a], [b]) => a - b);
        const run = {
          ts: points.map(([bucket]) => bucket / 1000),
          avg: points.map(([, values]) => values.reduce((sum, value) => sum + value, 0) / values.length),
          min: points.map(([, values]) => Math.min(...values)),
          max: points.map(([, values]) => Math.max(...values)),
          count: points.map(([, values]) => values.length),
        };
        return { battery_id, metric, runs: [run] };
      });
  }

  async raw(query: RawRecordsQuery): Promise<RawRecordRow[]> {
    this.rawQueries.push(query);
    const after = query.after;
    return this.inRange(query)
      .filter((record) => !after || record.ts > after.ts || (record.ts.getTime() === after.ts.getTime() && record.battery_id > after.batteryId))
      .sort((a, b) => a.ts.getTime() - b.ts.getTime() || compare(a.battery_id, b.battery_id))
      .slice(0, query.limit)
      .map(({ battery_id, ts, metrics }) => ({ battery_id, ts, metrics }));
  }

  async metricNames(query: RecordExportQuery): Promise<string[]> {
    return [...new Set(this.inRange(query).flatMap((record) => Object.keys(record.metrics)))].sort(compare);
  }

  async openExport(query: RecordExportQuery, batchSize: number): Promise<RecordExport> {
    this.exportQueries.push(query);
    const records = this.inRange(query)
      .sort((a, b) => a.ts.getTime() - b.ts.getTime() || compare(a.battery_id, b.battery_id))
      .map(({ battery_id, ts, metrics }) => ({ battery_id, ts, metrics }));
    this.openExports += 1;
    let closed = false;
    return {
      metrics: [...new Set(records.flatMap((record) => Object.keys(record.metrics)))].sort(compare),
      async *batches() {
        for (let start = 0; start < records.length; start += batchSize) yield records.slice(start, start + batchSize);
      },
      close: async () => {
        if (!closed) this.openExports -= 1;
        closed = true;
      },
    };
  }

  private inRange(query: { deviceId: string; from: Date; to: Date; batteryId: string | null }): StoredRecord[] {
    return this.records.filter(
      (record) => record.device_id === query.deviceId && record.ts >= query.from && record.ts < query.to && (query.batteryId === null || record.battery_id === query.batteryId),
    );
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
