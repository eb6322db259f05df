import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { type FieldError, NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import { decodeCursor, decodeTimeCursor, encodeCursor, encodeTimeCursor, invalidCursor } from '../../../shared/http/cursor.js';
import { strongTag } from '../../../shared/http/etag.js';
import { type FleetDefaults, FleetDefaultsStore, isDeviceOnline, MAX_TAGS, NAME_MAX_LENGTH, normalizeTag } from '../../devices/index.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import { autoBucketSec, BATTERY_ID_PATTERN, MAX_POINTS_EXPLICIT, METRIC_NAME, parseBucket, type RawRecordRow, resolveRange, type SeriesRow, TelemetryHistory } from '../../telemetry/index.js';
import { mayManage, ShareRoleError } from '../../sharing/index.js';
import { DashboardQueries, type DeviceFilters, type DeviceManagerRow, type DeviceSummaryRow, type DeviceVisibilityRow, type Viewer } from '../domain/dashboard-queries.js';
import { ExportSlots } from './export-slots.js';

/** The list's filters as the query gave them; DashboardService.devices checks them. */
export interface DeviceListFilters {
  q?: string;
  /** Each value one tag or several, comma-separated. */
  tag?: string[];
  online?: boolean;
  firmwareVersion?: string;
  socBelow?: number;
}

/** A listed device with `online` as of the moment the list's `online` filter used. */
export type ListedDevice = DeviceSummaryRow & { online: boolean };

export interface HistoryParams {
  from?: string;
  to?: string;
  metrics?: string;
  batteryId?: string;
  bucket?: string;
  limit?: number;
  cursor?: string;
}

export interface Point {
  ts: string;
  avg: number;
  min: number;
  max: number;
  count: number;
}

/**
 * One series of a bucket answer as the query gave it: one array per column, aligned by index, and
 * `order`, the indices ascending by ts. Points are not built as objects: the HTTP layer writes
 * them straight from the columns (history-json.ts); pointsOf() builds them where objects are wanted.
 */
export interface Series {
  metric: string;
  batteryId: string;
  columns: SeriesRow;
  order: Int32Array;
}

/** The points of a series, ascending by ts, ts as this API writes every instant (ISO 8601 in UTC with milliseconds). */
export function pointsOf(series: Series): Point[] {
  const { ts, avg, min, max, count } = series.columns;
  return Array.from(series.order, (i) => ({ ts: new Date(ts[i] * 1000).toISOString(), avg: avg[i], min: min[i], max: max[i], count: count[i] }));
}

export interface ExportParams {
  from?: string;
  to?: string;
  batteryId?: string;
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

/** Records per FETCH: ~75 kB of CSV; a batch or two are in memory at a time (measured in telemetry-export.e2e-spec.ts). */
export const EXPORT_BATCH_SIZE = 1000;

export type History =
  /** `etag`: only when the range has ended (toSeries). */
  | { kind: 'buckets'; deviceId: string; from: Date; to: Date; bucketSec: number; series: Series[]; etag: string | null }
  | { kind: 'raw'; deviceId: string; from: Date; to: Date; records: RawRecordRow[]; nextCursor: string | null };


@Injectable()
export class DashboardService {
  constructor(
    private readonly queries: DashboardQueries,
    private readonly telemetry: TelemetryHistory,
    private readonly clock: Clock,
    private readonly defaults: FleetDefaultsStore,
    private readonly exportSlots: ExportSlots,
  ) {}

  /** Fleet defaults, for the per-device figures that depend on them (online horizon, desired config version). */
  fleetDefaults(): Promise<FleetDefaults> {
    return this.defaults.current();
  }

  /** A device the viewer may not see answers exactly like one that does not exist. */
  async device(viewer: Viewer, deviceId: string): Promise<DeviceSummaryRow> {
    return visibleOrNotFound(await this.queries.device(viewer, deviceId));
  }

  /** The same check as device() without reading the summary. */
  async visibility(viewer: Viewer, deviceId: string): Promise<DeviceVisibilityRow> {
    return visibleOrNotFound(await this.queries.visibility(viewer, deviceId));
  }

  /** Who may change the device (its name and tags, its configuration); a viewer gets 403 SHARE_ROLE, anyone else the 404 of a device they cannot see. */
  async manageable(viewer: Viewer, deviceId: string): Promise<DeviceManagerRow> {
    const row = visibleOrNotFound(await this.queries.manageable(viewer, deviceId));
    if (!mayManage(row.access)) throw new ShareRoleError();
    return row;
  }

  /**
   * A page of the visible devices meeting every filter given. The cursor holds the last deviceId
   * only: the next page with the same filters continues after it, so each match comes once.
   */
  async devices(viewer: Viewer, limit: number, cursor: string | undefined, given: DeviceListFilters = {}): Promise<{ items: ListedDevice[]; nextCursor: string | null }> {
    const after = cursor === undefined ? undefined : decodeCursor(cursor, (value) => DEVICE_ID_PATTERN.test(value));
    // One instant and one read of the defaults for the online filter and every row's online field.
    const now = this.clock.now();
    const defaults = await this.defaults.current();
    const filters = parseFilters(given, now, defaults);
    const rows = await this.queries.devices(viewer, filters, limit + 1, after);
    const items = rows.slice(0, limit).map((row) => ({ ...row, online: this.isOnline(row, defaults, now) }));
    return { items, nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1].device_id) : null };
  }

  /** Online by the devices module's one rule (isDeviceOnline); the list's online filter says the same in SQL. */
  isOnline(device: DeviceSummaryRow, defaults: FleetDefaults, now: Date = this.clock.now()): boolean {
    return isDeviceOnline(device.last_telemetry_at, device.config_overrides.telemetryIntervalSec ?? defaults.settings.telemetryIntervalSec, now);
  }

  /** Where the viewer's view of a device's history starts: a later owner sees nothing from before the release that preceded their claim. */
  visibleFrom(viewer: Viewer, device: Pick<DeviceVisibilityRow, 'visible_since'>, from: Date | null): Date | null {
    return !viewer.isAdmin && device.visible_since && (!from || device.visible_since > from) ? device.visible_since : from;
  }

  /**
   * Every record of a visible device in the range (default: the last 24 hours; at most 366 days,
   * which covers the default retention), as history shows them to this viewer: a later owner's
   * export starts at their claim. Refused with TooManyExportsError past the account's or the
   * instance's cap, after the visibility check, so a device the viewer cannot see is a 404 always.
   */
  async export(viewer: Viewer, deviceId: string, params: ExportParams): Promise<TelemetryExport> {
    const range = resolveRange(params.from, params.to, this.clock.now());
    const batteryId = parseBatteryId(params.batteryId);
    const device = await this.visibility(viewer, deviceId);
    const visibleFrom = this.visibleFrom(viewer, device, range.from) ?? range.from;
    const release = this.exportSlots.take(viewer.userId);
    try {
      const records = await this.telemetry.openExport({ deviceId, from: visibleFrom < range.to ? visibleFrom : range.to, to: range.to, batteryId }, EXPORT_BATCH_SIZE);
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

  async history(viewer: Viewer, deviceId: string, params: HistoryParams): Promise<History> {
    const range = resolveRange(params.from, params.to, this.clock.now());
    const bucket = parseBucket(params.bucket);
    const metrics = params.metrics === undefined ? null : parseMetrics(params.metrics);
    const batteryId = parseBatteryId(params.batteryId);
    // Bucket answers are never paged: a cursor there is a client mistake, refused rather than ignored.
    if (params.cursor !== undefined && bucket.kind !== 'raw') throw invalidCursor('cursor applies only to bucket=raw: bucket answers have no pages');
    const after = params.cursor === undefined ? null : decodeRawCursor(params.cursor);
    const device = await this.visibility(viewer, deviceId);
    const visibleFrom = this.visibleFrom(viewer, device, range.from) ?? range.from;
    const effective = { from: visibleFrom < range.to ? visibleFrom : range.to, to: range.to };

    if (bucket.kind === 'raw') {
      const limit = params.limit ?? 1000;
      const rows = await this.telemetry.raw({ deviceId, ...effective, batteryId, limit: limit + 1, after });
      const records = rows.slice(0, limit);
      const last = records[records.length - 1];
      return { kind: 'raw', deviceId, ...range, records, nextCursor: rows.length > limit ? encodeTimeCursor(last.ts, last.battery_id) : null };
    }

    const bucketSec = bucket.kind === 'auto' ? autoBucketSec(range.from.getTime(), range.to.getTime()) : bucket.seconds;
    if ((range.to.getTime() - range.from.getTime()) / 1000 / bucketSec > MAX_POINTS_EXPLICIT) {
      throw new ValidationFailedError([{ field: 'bucket', message: `bucket is too small for the range: at most ${MAX_POINTS_EXPLICIT} points per series` }]);
    }
    const rows = effective.from < effective.to
      ? await this.telemetry.series({ deviceId, ...effective, bucketSec, metrics, batteryId })
      : [];
    // Without `to` the range runs to now: a new question every time, never tagged.
    const ended = params.to !== undefined && range.to.getTime() <= this.clock.now().getTime();
    const { series, tag } = toSeries(rows, bucketSec, ended ? [deviceId, range.from.toISOString(), range.to.toISOString(), bucketSec, effective.from.toISOString(), metrics?.join(',') ?? '', batteryId ?? ''].join('\u0000') : null);
    return { kind: 'buckets', deviceId, ...range, bucketSec, series, etag: tag };
  }
}

function parseFilters(given: DeviceListFilters, now: Date, defaults: FleetDefaults): DeviceFilters {
  const errors: FieldError[] = [];
  const filters: DeviceFilters = {};
  if (given.q !== undefined) {
    const q = given.q.normalize('NFC').trim();
    if (q.length === 0 || [...q].length > NAME_MAX_LENGTH) errors.push({ field: 'q', message: `q must be 1–${NAME_MAX_LENGTH} characters besides surrounding spaces` });
    else filters.q = q;
  }
  if (given.tag !== undefined) {
    const tags = given.tag.flatMap((value) => value.split(',')).map(normalizeTag);
    const distinct = new Set(tags);
    if (tags.length === 0 || distinct.has(null)) errors.push({ field: 'tag', message: 'tag must be tags of 1–32 of a–z 0–9 . _ - (repeated or comma-separated)' });
    else if (distinct.size > MAX_TAGS) errors.push({ field: 'tag', message: `at most ${MAX_TAGS} distinct tags (a device has no more)` });
    else filters.tags = [...distinct] as string[];
  }
  if (given.firmwareVersion !== undefined) {
    if (!FirmwareVersion.PATTERN.test(given.firmwareVersion)) errors.push({ field: 'firmwareVersion', message: 'firmwareVersion must be a dotted numeric version such as 0.1.4' });
    else filters.firmwareVersion = given.firmwareVersion;
  }
  if (given.socBelow !== undefined) {
    if (!Number.isFinite(given.socBelow) || given.socBelow < 0 || given.socBelow > 100) errors.push({ field: 'socBelow', message: 'socBelow must be a number from 0 to 100' });
    else filters.socBelow = given.socBelow;
  }
  if (given.online !== undefined) filters.online = { value: given.online, now, defaultIntervalSec: defaults.settings.telemetryIntervalSec };
  if (errors.length > 0) throw new ValidationFailedError(errors);
  return filters;
}

function visibleOrNotFound<T>(row: T | null): T {
  if (!row) throw new NotFoundError('No visible device has this id.');
  return row;
}

function parseBatteryId(raw: string | undefined): string | null {
  if (raw !== undefined && !BATTERY_ID_PATTERN.test(raw)) {
    throw new ValidationFailedError([{ field: 'batteryId', message: 'batteryId must be 1–64 characters of A–Z a–z 0–9 . _ : -' }]);
  }
  return raw ?? null;
}

function parseMetrics(raw: string): string[] {
  const names = raw.split(',').map((name) => name.trim()).filter(Boolean);
  if (names.length === 0 || names.length > 64 || names.some((name) => !METRIC_NAME.test(name))) {
    throw new ValidationFailedError([{ field: 'metrics', message: 'metrics must be 1–64 comma-separated metric names' }]);
  }
  return names;
}

/**
 * The answer's series, each with its points' order ascending by ts (the query leaves them unordered).
 *
 * Given the key of the question (device, range, bucket, what the viewer may see, filters), also a
 * strong tag of the answer. The answer is a function of the records in the range, and those only
 * ever grow: ingest never replaces a stored record (a duplicate is dropped, a late one added), and
 * each record adds one to the count of a bucket of each of its metrics. So the same counts per
 * series and bucket mean the same records, hence the same bytes, and a late record in the range
 * changes a count and the tag. Counts are cheap to hash next to the answer (~100 kB for 24 hours).
 */
export function toSeries(rows: SeriesRow[], bucketSec: number, tagKey: string | null = null): { series: Series[]; tag: string | null } {
  const hash = tagKey === null ? null : createHash('sha256').update(tagKey);
  const series = rows.map((row) => {
    const order = ascendingByTs(row.ts, bucketSec);
    if (hash) {
      const counted = new Float64Array(order.length * 2);
      for (let k = 0; k < order.length; k++) {
        counted[2 * k] = row.ts[order[k]];
        counted[2 * k + 1] = row.count[order[k]];
      }
      hash.update(`\u0000${row.metric}\u0000${row.battery_id}\u0000`).update(counted);
    }
    return { metric: row.metric, batteryId: row.battery_id, columns: row, order };
  });
  return { series, tag: hash ? strongTag(`h-${hash.digest('base64url')}`) : null };
}

/**
 * The indices of `ts` ascending by value. A series' bucket starts are distinct and bucketSec apart
 * (multiples of it from the epoch), so each has its own slot at (ts − first) / bucketSec and one
 * pass places them all: the comparison sort cost 4 % of a history request's CPU (bench S3
 * profile). Values that do not fit that shape are sorted the ordinary way.
 */
export function ascendingByTs(ts: readonly number[], bucketSec: number): Int32Array {
  const n = ts.length;
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < n; i++) {
    if (ts[i] < first) first = ts[i];
    if (ts[i] > last) last = ts[i];
  }
  const slots = n === 0 ? 0 : (last - first) / bucketSec + 1;
  if (Number.isInteger(slots) && slots <= 16 * n + 1024) {
    const slot = new Int32Array(slots).fill(-1);
    let placed = 0;
    for (let i = 0; i < n; i++) {
      const k = (ts[i] - first) / bucketSec;
      if (!Number.isInteger(k) || slot[k] !== -1) break;
      slot[k] = i;
      placed += 1;
    }
    if (placed === n) {
      const order = new Int32Array(n);
      let next = 0;
      for (let k = 0; k < slots; k++) if (slot[k] !== -1) order[next++] = slot[k];
      return order;
    }
  }
  return Int32Array.from(ts.keys()).sort((a, b) => ts[a] - ts[b]);
}

function decodeRawCursor(cursor: string): { ts: Date; batteryId: string } {
  const { ts, key } = decodeTimeCursor(cursor, (key) => BATTERY_ID_PATTERN.test(key));
  return { ts, batteryId: key };
}
