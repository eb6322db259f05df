/** Buckets as one array per column, aligned (ts: bucket start in Unix seconds). */
export interface BucketColumns {
  ts: number[];
  avg: number[];
  min: number[];
  max: number[];
  count: number[];
  /** Set on a run kept across answers (HistoryChunkCache): what a writer derives from it may be kept as long as the run. */
  shared?: true;
}

/** One series' buckets as columns, in no particular order. */
export interface SeriesRow extends BucketColumns {
  battery_id: string;
  metric: string;
}

/**
 * One series as series() answers it: its buckets in runs, each ascending by ts, the runs one
 * after another in time. A run may be shared with other answers (held in memory, see
 * HistoryChunkCache): nobody changes one.
 */
export interface SeriesRuns {
  battery_id: string;
  metric: string;
  runs: readonly BucketColumns[];
}

export interface RawRecordRow {
  battery_id: string;
  ts: Date;
  metrics: Record<string, number>;
}

/** Buckets of bucketSec seconds over [from, to), epoch-aligned; null filters mean every metric, every battery. */
export interface SeriesQuery {
  deviceId: string;
  from: Date;
  to: Date;
  bucketSec: number;
  metrics: string[] | null;
  batteryId: string | null;
}

/** Records of [from, to) ascending by (ts, batteryId), from just after `after`, at most `limit`. */
export interface RawRecordsQuery {
  deviceId: string;
  from: Date;
  to: Date;
  batteryId: string | null;
  limit: number;
  after: { ts: Date; batteryId: string } | null;
}

/** Every record of [from, to), of one battery or all. */
export interface RecordExportQuery {
  deviceId: string;
  from: Date;
  to: Date;
  batteryId: string | null;
}

/**
 * The records of an export as they are read: the names of the metrics they hold, sorted, then the
 * records in batches ascending by (ts, batteryId), both from one snapshot, so no record holds a
 * metric missing from `metrics`. It holds a database connection from open until close(), which the
 * caller must call whatever happens (also when it stops reading early).
 */
export interface RecordExport {
  readonly metrics: string[];
  /** Ends after the last record; may be iterated once. */
  batches(): AsyncGenerator<RawRecordRow[], void, undefined>;
  close(): Promise<void>;
}

/** A device's stored telemetry as history answers need it: aggregated per bucket, or the records themselves. */
export abstract class TelemetryHistoryQueries {
  /** Per series, the avg, min, max and count of every bucket that holds records; equal to aggregating the raw records. */
  abstract series(query: SeriesQuery): Promise<SeriesRuns[]>;

  abstract raw(query: RawRecordsQuery): Promise<RawRecordRow[]>;

  /** The names of the metrics the records of the range hold, sorted by code point: the columns an export of it has. */
  abstract metricNames(query: RecordExportQuery): Promise<string[]>;

  /** Every record of the range, `batchSize` at a time: memory stays bounded by one batch whatever the range holds. */
  abstract openExport(query: RecordExportQuery, batchSize: number): Promise<RecordExport>;
}
