import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { decodeTimeCursor, encodeTimeCursor, invalidCursor } from '../../../shared/http/cursor.js';
import { strongTag } from '../../../shared/http/etag.js';
import { autoBucketSec, type BucketChoice, type HistoryRange, MAX_POINTS_EXPLICIT, parseBatteryId, parseBucket, parseMetrics, resolveRange } from '../domain/history-query.js';
import type { Series } from '../domain/history-series.js';
import { TelemetryHistoryQueries, type RawRecordRow, type RecordExport, type RecordExportQuery, type SeriesRuns, type BucketColumns } from '../domain/telemetry-history.queries.js';
import { BATTERY_ID_PATTERN } from '../domain/telemetry-record.js';
import { ExportSlots } from './export-slots.js';

export interface HistoryParams {
  from?: string;
  to?: string;
  metrics?: string;
  batteryId?: string;
  bucket?: string;
  limit?: number;
  cursor?: string;
}

export interface ExportParams {
  from?: string;
  to?: string;
  batteryId?: string;
}

/** What a history request asks, checked (historyQuery). */
export interface HistoryQuery {
  range: HistoryRange;
  /** The range was given an end: an answer over it may be tagged once it has passed. */
  endGiven: boolean;
  bucket: BucketChoice;
  metrics: string[] | null;
  batteryId: string | null;
  limit: number;
  after: { ts: Date; batteryId: string } | null;
}

/** What an export asks, checked (exportQuery). */
export interface ExportQuery {
  range: HistoryRange;
  batteryId: string | null;
}

/**
 * A running export: the range asked, the metric names of its records (sorted by code point) and
 * the records in batches ascending by (ts, batteryId). It holds a database connection and one of
 * the account's export slots until close(), which the caller must call whatever happens; close()
 * may be called more than once.
 */
export interface TelemetryExport {
  deviceId: string;
  from: Date;
  to: Date;
  metrics: string[];
  batches(): AsyncGenerator<RawRecordRow[], void, undefined>;
  close(): Promise<void>;
}

/**
 * An export of several devices' records, read one device after another (the dashboard's fleet
 * export). It holds one of the account's export slots until close(), which the caller must call
 * whatever happens (more than once is fine); each device's part holds a database connection until
 * the caller closes it, before opening the next. A device's part starts at its `visibleSince`.
 */
export interface DevicesExport {
  from: Date;
  to: Date;
  /** The metrics of the device's records in the range, sorted by code point: the columns openExport would give them. */
  metricNames(deviceId: string, visibleSince: Date | null): Promise<string[]>;
  /** The device's records in the range, in batches ascending by (ts, batteryId), with their metric names from the same snapshot. */
  records(deviceId: string, visibleSince: Date | null): Promise<RecordExport>;
  close(): void;
}

/** Records per FETCH: ~75 kB of CSV; a batch or two are in memory at a time (measured in telemetry-export.e2e-spec.ts). */
export const EXPORT_BATCH_SIZE = 1000;

export type History =
  /** `etag`: only when the range has ended (toSeries). */
  | { kind: 'buckets'; deviceId: string; from: Date; to: Date; bucketSec: number; series: Series[]; etag: string | null }
  | { kind: 'raw'; deviceId: string; from: Date; to: Date; records: RawRecordRow[]; nextCursor: string | null };

/**
 * A device's telemetry history and exports. Who may see which device is not its business: the
 * caller checks the question first (historyQuery, exportQuery: 400s before anything is read), then
 * whether the device is visible, then asks with `visibleSince`, the instant the viewer's view of
 * the device starts (null: all of it). Answers still name the range asked.
 */
@Injectable()
export class TelemetryHistoryService {
  constructor(
    private readonly telemetry: TelemetryHistoryQueries,
    private readonly clock: Clock,
    private readonly exportSlots: ExportSlots,
  ) {}

  /** Refused with ValidationFailedError naming the field. */
  historyQuery(params: HistoryParams): HistoryQuery {
    const range = resolveRange(params.from, params.to, this.clock.now());
    const bucket = parseBucket(params.bucket);
    const metrics = params.metrics === undefined ? null : parseMetrics(params.metrics);
    const batteryId = parseBatteryId(params.batteryId);
    // Bucket answers are never paged: a cursor there is a client mistake, refused rather than ignored.
    if (params.cursor !== undefined && bucket.kind !== 'raw') throw invalidCursor('cursor applies only to bucket=raw: bucket answers have no pages');
    const after = params.cursor === undefined ? null : decodeRawCursor(params.cursor);
    return { range, endGiven: params.to !== undefined, bucket, metrics, batteryId, limit: params.limit ?? 1000, after };
  }

  /** Aggregated per bucket, or with bucket=raw a page of the records (default: 1000). A bucket too small for the range is a ValidationFailedError. */
  async history(deviceId: string, query: HistoryQuery, visibleSince: Date | null): Promise<History> {
    const { range, bucket, metrics, batteryId } = query;
    const effective = shown(range, visibleSince);

    if (bucket.kind === 'raw') {
      const rows = await this.telemetry.raw({ deviceId, ...effective, batteryId, limit: query.limit + 1, after: query.after });
      const records = rows.slice(0, query.limit);
      const last = records[records.length - 1];
      return { kind: 'raw', deviceId, ...range, records, nextCursor: rows.length > query.limit ? encodeTimeCursor(last.ts, last.battery_id) : null };
    }

    const bucketSec = bucket.kind === 'auto' ? autoBucketSec(range.from.getTime(), range.to.getTime()) : bucket.seconds;
    if ((range.to.getTime() - range.from.getTime()) / 1000 / bucketSec > MAX_POINTS_EXPLICIT) {
      throw new ValidationFailedError([{ field: 'bucket', message: `bucket is too small for the range: at most ${MAX_POINTS_EXPLICIT} points per series` }]);
    }
    const rows = effective.from < effective.to
      ? await this.telemetry.series({ deviceId, ...effective, bucketSec, metrics, batteryId })
      : [];
    // Without `to` the range runs to now: a new question every time, never tagged.
    const ended = query.endGiven && range.to.getTime() <= this.clock.now().getTime();
    const { series, tag } = toSeries(rows, ended ? [deviceId, range.from.toISOString(), range.to.toISOString(), bucketSec, effective.from.toISOString(), metrics?.join(',') ?? '', batteryId ?? ''].join('\u0000') : null);
    return { kind: 'buckets', deviceId, ...range, bucketSec, series, etag: tag };
  }

  /** Default: the last 24 hours; at most 366 days, which covers the default retention. Refused with ValidationFailedError naming the field. */
  exportQuery(params: ExportParams): ExportQuery {
    return { range: resolveRange(params.from, params.to, this.clock.now()), batteryId: parseBatteryId(params.batteryId) };
  }

  /**
   * Every record of the range the viewer sees, in batches. Holds one of `account`'s export slots
   * until closed: refused with TooManyExportsError past the account's or the instance's cap.
   */
  async openExport(account: string, deviceId: string, query: ExportQuery, visibleSince: Date | null): Promise<TelemetryExport> {
    const { range, batteryId } = query;
    const release = this.exportSlots.take(account);
    try {
      const records = await this.telemetry.openExport({ deviceId, ...shown(range, visibleSince), batteryId }, EXPORT_BATCH_SIZE);
      return {
        deviceId,
        ...range,
        metrics: records.metrics,
        batches: () => records.batches(),
        close: async () => {
          try {
            await records.close();
          } finally {
            release();
          }
        },
      };
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * An export of several devices' records under one of `account`'s export slots, taken here for as
   * long as it runs: refused with TooManyExportsError like openExport.
   */
  openDevicesExport(account: string, query: ExportQuery): DevicesExport {
    const { range, batteryId } = query;
    const release = this.exportSlots.take(account);
    const part = (deviceId: string, visibleSince: Date | null): RecordExportQuery => ({ deviceId, ...shown(range, visibleSince), batteryId });
    return {
      ...range,
      metricNames: (deviceId, visibleSince) => this.telemetry.metricNames(part(deviceId, visibleSince)),
      records: (deviceId, visibleSince) => this.telemetry.openExport(part(deviceId, visibleSince), EXPORT_BATCH_SIZE),
      close: release,
    };
  }
}

/** The part of `range` the viewer sees: from visibleSince on (empty when the range lies wholly before it). */
function shown(range: HistoryRange, visibleSince: Date | null): HistoryRange {
  const from = visibleSince && visibleSince > range.from ? visibleSince : range.from;
  return { from: from < range.to ? from : range.to, to: range.to };
}

/**
 * The answer's series, each as its runs of buckets ascending by ts.
 *
 * Given the key of the question (device, range, bucket, what the viewer may see, filters), also a
 * strong tag of the answer. The answer is a function of the records in the range, and those only
 * ever grow: ingest never replaces a stored record (a duplicate is dropped, a late one added), and
 * each record adds one to the count of a bucket of each of its metrics. So the same counts per
 * series and bucket mean the same records, hence the same bytes, and a late record in the range
 * changes a count and the tag. Counts are cheap to hash next to the answer (~100 kB for 24 hours).
 * A series' (ts, count) pairs are hashed in one piece.
 */
export function toSeries(rows: readonly SeriesRuns[], tagKey: string | null = null): { series: Series[]; tag: string | null } {
  const hash = tagKey === null ? null : createHash('sha256').update(tagKey);
  const series = rows.map((row) => {
    if (hash) {
      hash.update(`\u0000${row.metric}\u0000${row.battery_id}\u0000`);
      const counted = new Float64Array(2 * row.runs.reduce((sum, run) => sum + run.ts.length, 0));
      let at = 0;
      for (const run of row.runs) {
        writeCounted(run, counted, at);
        at += 2 * run.ts.length;
      }
      hash.update(counted);
    }
    return { metric: row.metric, batteryId: row.battery_id, runs: row.runs };
  });
  return { series, tag: hash ? strongTag(`h-${hash.digest('base64url')}`) : null };
}

/** The run's buckets as ts, count, ts, count… from `at` on. */
function writeCounted({ ts, count }: BucketColumns, into: Float64Array, at: number): void {
  for (let k = 0; k < ts.length; k++) {
    into[at + 2 * k] = ts[k];
    into[at + 2 * k + 1] = count[k];
  }
}

function decodeRawCursor(cursor: string): { ts: Date; batteryId: string } {
  const { ts, key } = decodeTimeCursor(cursor, (key) => BATTERY_ID_PATTERN.test(key));
  return { ts, batteryId: key };
}
