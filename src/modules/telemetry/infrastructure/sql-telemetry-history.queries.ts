import { Injectable } from '@nestjs/common';
import { ReplicaSql } from '../../../shared/database/replica-sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { checkedSpans, edgeSlots, rollupSpans, type EdgeSlots, type HistoryRange } from '../domain/history-query.js';
import { bucketsOf, cutAtSlots, slotRuns, takeRecords, takeSlots, withRecordsIn, type SeriesParts, type SlotRecords } from '../domain/history-series.js';
import { ROLLUP_LEVELS } from '../domain/rollup-levels.js';
import { DAY_MS } from '../domain/telemetry-compaction.store.js';
import { TelemetryHistoryQueries, type RawRecordRow, type RawRecordsQuery, type RecordExport, type RecordExportQuery, type SeriesQuery, type SeriesRuns, type BucketColumns } from '../domain/telemetry-history.queries.js';
import { HistoryChunkCache } from './history-chunk-cache.js';
import { type PackedSeriesParts, seriesParts } from './packed-series-parts.js';
import { COMPACT_DAYS, COMPACT_HOURS, daySlots, hoursMeeting, hourValues, readings } from './compact-days.sql.js';
import { rollupTable } from './rollup-levels.sql.js';
import { byCodePoint } from '../../../shared/kernel/code-point-order.js';

/*
 * Parameters of the series statement: $1 device, $2 from, $3 to, then each level's span (finest
 * first, two each), then the two filters.
 */
const spanFrom = (levelIndex: number): number => 4 + 2 * levelIndex;
const METRICS = spanFrom(ROLLUP_LEVELS.length);
const BATTERY = METRICS + 1;

const filters = (metric: string, batteryId: string) => `($${METRICS}::text[] IS NULL OR ${metric} = ANY($${METRICS})) AND ($${BATTERY}::text IS NULL OR ${batteryId} = $${BATTERY})`;

/** The coarsest level's share: its whole span. */
function coarsestLevel(table: string, from: number): string {
  return `SELECT r.battery_id, r.metric, r.bucket AS at, r.count, r.sum, r.min, r.max
           FROM ${table} r
          WHERE r.device_id = $1 AND r.bucket >= $${from} AND r.bucket < $${from + 1}
            AND ${filters('r.metric', 'r.battery_id')}`;
}

/**
 * One finer level's share: its span (parameters $outer, $outer + 1) minus the span of the next
 * coarser level ($inner, $inner + 1), as two ranges of one index scan each.
 */
function levelMinusInner(table: string, outer: number, inner: number): string {
  return `SELECT r.battery_id, r.metric, r.bucket, r.count, r.sum, r.min, r.max
           FROM (VALUES ($${outer}::timestamptz, $${inner}::timestamptz), ($${inner + 1}::timestamptz, $${outer + 1}::timestamptz)) AS span (lo, hi)
           JOIN ${table} r ON r.device_id = $1 AND r.bucket >= span.lo AND r.bucket < span.hi
          WHERE ${filters('r.metric', 'r.battery_id')}`;
}

/**
 * The finest level's share from compact days (telemetry_days): their five-minute slots in the
 * same two ranges as levelMinusInner; the rows of the finest level's table hold the rest (records
 * that came after their day was compacted).
 */
function compactSlotsMinusInner(outer: number, inner: number): string {
  return `SELECT d.battery_id, s.metric, s.bucket, s.count, s.sum, s.min, s.max
           FROM (VALUES ($${outer}::timestamptz, $${inner}::timestamptz), ($${inner + 1}::timestamptz, $${outer + 1}::timestamptz)) AS span (lo, hi)
           JOIN ${COMPACT_DAYS} d ON d.device_id = $1 AND d.day > span.lo - interval '1 day' AND d.day < span.hi AND span.lo < span.hi
           CROSS JOIN LATERAL ${daySlots('d', 'span.lo', 'span.hi')} AS s
          WHERE ${filters('s.metric', 'd.battery_id')}`;
}

/** Raw records of [$from, $to): one edge of the range that no rollup level answers, from rows and compact hours. */
function rawEdge(from: number, to: number): string {
  return `SELECT t.battery_id, m.key, t.ts, 1, v.value, v.value, v.value
           FROM telemetry t
           CROSS JOIN LATERAL jsonb_each_text(t.metrics) AS m (key, value)
           CROSS JOIN LATERAL (SELECT m.value::float8 AS value) AS v
          WHERE t.device_id = $1 AND t.ts >= $${from} AND t.ts < $${to}
            AND ${filters('m.key', 't.battery_id')}
         UNION ALL
         SELECT h.battery_id, v.metric, v.ts, 1, v.value, v.value, v.value
           FROM ${COMPACT_HOURS} h
           CROSS JOIN LATERAL ${hourValues('h', `$${from}`, `$${to}`)} AS v
          WHERE ${hoursMeeting('$1', `$${from}`, `$${to}`)} AND $${from} < $${to}
            AND ${filters('v.metric', 'h.battery_id')}`;
}

const coarsest = ROLLUP_LEVELS.length - 1;

/** The cache's series of a device and bucket width (`group`): one battery's metric. */
const seriesKey = (group: string, parts: { battery_id: string; metric: string }): string => `${group}\u0000${parts.battery_id}\u0000${parts.metric}`;
/** The cache's series of an edge slot's records, beside the buckets of the same series. */
const recordsSeries = (series: string): string => `${series}\u0000records`;
/** The cache's group of the records of one edge slot of a device (and bucket width): whether it holds any (holds). */
const edgeGroup = (group: string, slot: number): string => `${group}\u0000records\u0000${slot}`;
const PARTS = [
  coarsestLevel(rollupTable(ROLLUP_LEVELS[coarsest]), spanFrom(coarsest)),
  ...ROLLUP_LEVELS.slice(0, coarsest)
    .map((level, index) => levelMinusInner(rollupTable(level), spanFrom(index), spanFrom(index + 1)))
    .reverse(),
  compactSlotsMinusInner(spanFrom(0), spanFrom(1)),
  rawEdge(2, spanFrom(0)),
  rawEdge(spanFrom(0) + 1, 3),
];

/**
 * The parts of the buckets of [from, to): each by the coarsest rollup level that is exact for it
 * (see rollupSpans: the levels' spans, nested) and raw records at the edges; merged per bucket,
 * they equal aggregating the raw records. The caller merges them (bucketsOf, in time order, so the
 * answer does not depend on the plan).
 * Each series comes back as one row with one column per field: a day of 5-minute parts is over a
 * thousand rows, and parsing them row by row in Node cost as much as the query. A column is the
 * parts' values as big-endian float8 (float8send) one after another (seriesParts reads them): the
 * same doubles as text, written by PostgreSQL and parsed by Node, cost ~0.5 ms more per 24-hour
 * answer (json_agg was a third of the statement's execution). (at is Unix seconds: to_char cost
 * ~3 ms per 1,000 points.) The columns are not ordered here, but aligned: ordered aggregates made
 * PostgreSQL sort every part by series and time. The raw edges are two arms with their bounds as
 * parameters, so the planner prunes the partitions.
 */
const seriesStatement = (parts: readonly string[], head = 'WITH') => `${head} parts (battery_id, metric, at, count, sum, min, max) AS (
         ${parts.join('\n         UNION ALL\n         ')}
       )
       SELECT battery_id, metric,
              string_agg(float8send(date_part('epoch', at)), '') AS at, string_agg(float8send(count), '') AS count,
              string_agg(float8send(sum), '') AS sum, string_agg(float8send(min), '') AS min, string_agg(float8send(max), '') AS max
         FROM parts
        GROUP BY battery_id, metric
        ORDER BY metric, battery_id`;
export const SERIES_SQL = seriesStatement(PARTS);

/**
 * SERIES_SQL without the raw records of the edges: the check statement of an answer whose edge
 * slots' records are kept (edgeSlots). The raw arms were about half of the check statement's
 * PostgreSQL time (bench/README.md). It takes SERIES_SQL's parameters; the range's ends ($2, $3)
 * are named in a CTE that nothing reads, so that they keep their types.
 */
export const CHECKED_SERIES_SQL = seriesStatement(PARTS.slice(0, -2), 'WITH range_ends AS (SELECT $2::timestamptz AS from_, $3::timestamptz AS to_),');

/**
 * The raw arms of SERIES_SQL alone: the records of [$2, $4) and [$5, $3), the edge slots an answer
 * lacks (an empty window where it lacks one). It takes SERIES_SQL's parameters; the coarser levels'
 * spans are named in a CTE that nothing reads.
 */
const unusedSpans = Array.from({ length: 2 * (ROLLUP_LEVELS.length - 1) }, (_, k) => `$${spanFrom(1) + k}::timestamptz`).join(', ');
export const EDGE_RECORDS_SQL = seriesStatement(PARTS.slice(-2), `WITH coarser_spans AS (SELECT ${unusedSpans}),`);

/*
 * The metric names of [$2, $3), from the same nested spans as the series statement with day-wide
 * buckets (every level's width divides a day, so each level answers its span exactly): a year is
 * ~365 rows of the daily level per battery and metric, plus a few finer slots and at most two
 * 5-minute edges of raw records, where reading the records themselves for their keys would scan
 * every one of them before the first row could be sent. Exact because the rollups hold a row for
 * a (slot, battery, metric) exactly when a stored record of that slot has the metric: the ingest
 * statement writes both from the rows it inserted.
 */
const NAMES_BATTERY = spanFrom(ROLLUP_LEVELS.length);
const namesIn = (table: string, where: string) => `SELECT DISTINCT r.metric FROM ${table} r ${where} AND ($${NAMES_BATTERY}::text IS NULL OR r.battery_id = $${NAMES_BATTERY})`;
const rawNames = (from: number, to: number) =>
  `SELECT DISTINCT jsonb_object_keys(t.metrics) FROM telemetry t
    WHERE t.device_id = $1 AND t.ts >= $${from} AND t.ts < $${to} AND ($${NAMES_BATTERY}::text IS NULL OR t.battery_id = $${NAMES_BATTERY})
   UNION
   SELECT DISTINCT v.metric FROM ${COMPACT_HOURS} h CROSS JOIN LATERAL ${hourValues('h', `$${from}`, `$${to}`)} AS v
    WHERE ${hoursMeeting('$1', `$${from}`, `$${to}`)} AND $${from} < $${to}
      AND ($${NAMES_BATTERY}::text IS NULL OR h.battery_id = $${NAMES_BATTERY})`;
/** The names of the finest level's compact slots in its two ranges. */
const compactSlotNames = (outer: number, inner: number) =>
  `SELECT DISTINCT s.metric
     FROM (VALUES ($${outer}::timestamptz, $${inner}::timestamptz), ($${inner + 1}::timestamptz, $${outer + 1}::timestamptz)) AS span (lo, hi)
     JOIN ${COMPACT_DAYS} d ON d.device_id = $1 AND d.day > span.lo - interval '1 day' AND d.day < span.hi AND span.lo < span.hi
      AND ($${NAMES_BATTERY}::text IS NULL OR d.battery_id = $${NAMES_BATTERY})
    CROSS JOIN LATERAL ${daySlots('d', 'span.lo', 'span.hi')} AS s`;
export const METRIC_NAMES_SQL = [
  namesIn(rollupTable(ROLLUP_LEVELS[coarsest]), `WHERE r.device_id = $1 AND r.bucket >= $${spanFrom(coarsest)} AND r.bucket < $${spanFrom(coarsest) + 1}`),
  ...ROLLUP_LEVELS.slice(0, coarsest).map((level, index) => {
    const outer = spanFrom(index);
    const inner = spanFrom(index + 1);
    return namesIn(
      `(VALUES ($${outer}::timestamptz, $${inner}::timestamptz), ($${inner + 1}::timestamptz, $${outer + 1}::timestamptz)) AS span (lo, hi) JOIN ${rollupTable(level)}`,
      'ON r.device_id = $1 AND r.bucket >= span.lo AND r.bucket < span.hi WHERE true',
    );
  }),
  compactSlotNames(spanFrom(0), spanFrom(1)),
  rawNames(2, spanFrom(0)),
  rawNames(spanFrom(0) + 1, 3),
].join('\n UNION\n ');

/**
 * The records of one window of an export, in time order (the compact hours of the window are
 * unpacked whole), each ts as Unix milliseconds: the instant the answer writes, and a number Node
 * reads for a tenth of what parsing timestamptz text costs it (~4 µs a record).
 */
const EXPORT_CURSOR_SQL = `DECLARE telemetry_export NO SCROLL CURSOR FOR
  SELECT r.battery_id, (extract(epoch FROM date_trunc('milliseconds', r.ts)) * 1000)::float8 AS ts_ms, r.metrics
    FROM ${readings('$1', '$4', '$2', '$3')} AS r ORDER BY r.ts, r.battery_id`;

/** A row of EXPORT_CURSOR_SQL. */
interface ExportRow {
  battery_id: string;
  ts_ms: number;
  metrics: Record<string, number>;
}

/** The records of a raw page's window after its cursor. */
const RAW_PAGE_SQL = `SELECT battery_id, ts, metrics FROM ${readings('$1', '$4', '$2', '$3')}
  WHERE ($5::timestamptz IS NULL OR (ts, battery_id) > ($5, $6::text))
  ORDER BY ts, battery_id LIMIT $7`;

/**
 * [from, to) cut at UTC midnights: the windows the record reads go through one at a time, so a
 * read unpacks at most one day of compact hours per battery at once and a page stops as soon as it is full.
 */
export function* dayWindows(from: Date, to: Date): Generator<{ from: Date; to: Date }> {
  for (let start = from.getTime(); start < to.getTime(); ) {
    const end = Math.min(to.getTime(), (Math.floor(start / DAY_MS) + 1) * DAY_MS);
    yield { from: new Date(start), to: new Date(end) };
    start = end;
  }
}

/**
 * History as hand-written SQL: the history hot path measured by S3 (bench/README.md). The series
 * statement is named so each connection plans it once and keeps the plan (docs/operations.md:
 * plan_cache_mode); the name predates its move from the dashboard and the bench baseline uses it.
 * Every read here may be a few seconds old: on a read replica when one is close enough (ReplicaSql).
 */
@Injectable()
export class SqlTelemetryHistoryQueries extends TelemetryHistoryQueries {
  constructor(
    private readonly sql: ReplicaSql,
    private readonly cache: HistoryChunkCache,
  ) {
    super();
  }

  /**
   * The buckets of the range's whole check slots (checkedSpans) come from HistoryChunkCache when
   * the slot's record count, read by the same statement as the edges, is the run's; the slots it
   * lacks or holds with another count are read again in one more statement and kept. Where the
   * five-minute level answers the buckets, the edges' records are kept alike (edgeSlots): read whole
   * while the cache has room and does not hold them, then taken from it (edgeRecords) by an answer
   * whose statement is CHECKED_SERIES_SQL, without raw records. An answer of
   * a device and bucket width the cache holds nothing of would miss every slot: it is read whole
   * in one statement, as without the cache, and its whole slots are kept when the cache admits them.
   */
  async series(query: SeriesQuery): Promise<SeriesRuns[]> {
    const { bucketSec } = query;
    const checked = this.cache.enabled ? checkedSpans(query, bucketSec) : null;
    const group = `${query.deviceId}\u0000${bucketSec}`;
    const seriesOf = (parts: { battery_id: string; metric: string }) => seriesKey(group, parts);
    if (checked === null || !this.cache.holds(group)) {
      const rows = await this.parts(query, rollupSpans(query, bucketSec));
      const check = checked !== null && this.cache.admits() ? checked.check : null;
      return rows.map((parts) => {
        const buckets = bucketsOf(parts, bucketSec);
        if (check) {
          const series = seriesOf(parts);
          for (const [slot, { run, count }] of slotRuns(buckets, check.widthSec)) {
            if (slot >= check.from && slot + check.widthSec <= check.to) this.cache.set(series, slot, group, run, count);
          }
        }
        return { battery_id: parts.battery_id, metric: parts.metric, runs: [buckets] };
      });
    }
    const { check } = checked;
    const edges = edgeSlots(query, checked);
    const edgeStarts = edges ? [edges.slots.first, edges.slots.last].filter((slot) => slot !== null) : [];
    // The edges' records come from the cache when it holds some of each edge slot of the device (the
    // statement then reads none); else the statement reads them, the whole edge slots while the
    // cache has room, so as to keep them; else, as without the cache, the range's part of them.
    const fromKept = edges !== null && edgeStarts.every((slot) => this.cache.holds(edgeGroup(group, slot)));
    const readWhole = edges !== null && !fromKept && this.cache.roomy;
    const rows = fromKept
      ? await this.parts(query, edges.spans, CHECKED_SERIES_SQL, 'dashboard_series_checked')
      : await this.parts(readWhole ? { ...query, ...edges.spans[0] } : query, checked.spans);
    /** By series, then edge slot: the records of the edges read whole (readWhole). */
    const read = new Map<string, Map<number, SlotRecords>>();
    const cut = rows.map((parts) => {
      const series = seriesOf(parts);
      if (readWhole) {
        const { rest, records } = takeRecords(parts, edgeStarts, edges.slots.widthSec);
        for (const [slot, kept] of records) this.cache.set(recordsSeries(series), slot, edgeGroup(group, slot), kept, kept.ts.length);
        read.set(series, records);
        return { parts, series, edgeCounts: new Map<number, number>(), ...cutAtSlots(rest, check) };
      }
      const { rest, counts } = fromKept ? takeSlots(parts, edgeStarts) : { rest: parts, counts: new Map<number, number>() };
      return { parts, series, edgeCounts: counts, ...cutAtSlots(rest, check) };
    });
    // An edge slot read whole without a record of any series (a range that starts before the
    // device's first record, say) is kept as read, empty: else no later answer could take its
    // edges from the cache. A record landing there later is counted, found lacking and read.
    if (readWhole) {
      for (const slot of edgeStarts) {
        if (!this.cache.holds(edgeGroup(group, slot))) this.cache.set(recordsSeries(group), slot, edgeGroup(group, slot), { ts: [], values: [] }, 0);
      }
    }
    /** By series, then slot: the runs of the answer. */
    const found = new Map<string, Map<number, BucketColumns>>(cut.map(({ series }) => [series, new Map()]));
    let lo = Infinity;
    let hi = -Infinity;
    for (const { series, slots } of cut) {
      const runs = found.get(series)!;
      for (const [slot, count] of slots) {
        const run = this.cache.get(series, slot, count);
        if (run) runs.set(slot, run);
        else {
          lo = Math.min(lo, slot);
          hi = Math.max(hi, slot + check.widthSec);
        }
      }
    }
    if (lo < hi) {
      const range = { from: new Date(lo * 1000), to: new Date(hi * 1000) };
      for (const parts of await this.parts({ ...query, ...range }, rollupSpans(range, bucketSec))) {
        const series = seriesOf(parts);
        // A series the first statement did not name is kept for later answers, not this one.
        const runs = found.get(series);
        for (const [slot, { run, count }] of slotRuns(bucketsOf(parts, bucketSec), check.widthSec)) {
          if (runs?.has(slot)) continue;
          this.cache.set(series, slot, group, run, count);
          runs?.set(slot, run);
        }
      }
    }
    const records = fromKept ? await this.edgeRecords(query, edges.slots, group, cut) : read;
    const [fromMs, toMs] = [query.from.getTime(), query.to.getTime()];
    // Without edges taken out (neither way above), the parts hold the range's part of the edges' records already.
    const first = fromKept || readWhole ? edges.slots.first : null;
    const last = fromKept || readWhole ? edges.slots.last : null;
    return cut.flatMap(({ parts, series, before, after, slots }) => {
      const edgeRuns = records.get(series);
      const runs: BucketColumns[] = [bucketsOf(first === null ? before : withRecordsIn(before, edgeRuns?.get(first), fromMs, toMs), bucketSec)];
      const kept = found.get(series)!;
      for (const slot of [...slots.keys()].sort((a, b) => a - b)) {
        const run = kept.get(slot);
        if (run) runs.push(run);
      }
      runs.push(bucketsOf(last === null ? after : withRecordsIn(after, edgeRuns?.get(last), fromMs, toMs), bucketSec));
      const nonEmpty = runs.filter((run) => run.ts.length > 0);
      // A series whose only parts in the widened span were edge slots with no record in the range is not in the answer, as without the cache.
      return nonEmpty.length === 0 ? [] : [{ battery_id: parts.battery_id, metric: parts.metric, runs: nonEmpty }];
    });
  }

  /**
   * The records of the edge slots the check statement counted (`edgeCounts`), by series, then
   * slot: from HistoryChunkCache while a slot holds the counted records, else read (both slots in
   * one statement) and kept.
   */
  private async edgeRecords(query: SeriesQuery, edges: EdgeSlots, group: string, cut: Array<{ series: string; edgeCounts: Map<number, number> }>): Promise<Map<string, Map<number, SlotRecords>>> {
    const records = new Map<string, Map<number, SlotRecords>>();
    const lacking = new Set<number>();
    for (const { series, edgeCounts } of cut) {
      const slots = new Map<number, SlotRecords>();
      records.set(series, slots);
      for (const [slot, count] of edgeCounts) {
        const kept = this.cache.getRecords(recordsSeries(series), slot, count);
        if (kept) slots.set(slot, kept);
        else lacking.add(slot);
      }
    }
    if (lacking.size === 0) return records;
    const windowOf = (slot: number | null) => (slot !== null && lacking.has(slot) ? { from: new Date(slot * 1000), to: new Date((slot + edges.widthSec) * 1000) } : null);
    const first = windowOf(edges.first);
    const last = windowOf(edges.last);
    // The raw arms read [$2, $4) and [$5, $3); a slot not lacking gets an empty window.
    const startWindow = first ?? { from: last!.from, to: last!.from };
    const endWindow = last ?? { from: first!.to, to: first!.to };
    const spans = [{ from: startWindow.to, to: endWindow.from }, ...ROLLUP_LEVELS.slice(1).map(() => ({ from: endWindow.from, to: endWindow.from }))];
    const rows = await this.parts({ ...query, from: startWindow.from, to: endWindow.to }, spans, EDGE_RECORDS_SQL, 'dashboard_edge_records');
    for (const parts of rows) {
      const series = seriesKey(group, parts);
      for (const [slot, kept] of takeRecords(parts, [...lacking], edges.widthSec).records) {
        this.cache.set(recordsSeries(series), slot, edgeGroup(group, slot), kept, kept.ts.length);
        // A series the check statement did not name is kept for later answers, not this one.
        const slots = records.get(series);
        if (slots && !slots.has(slot)) slots.set(slot, kept);
      }
    }
    return records;
  }

  /** SERIES_SQL (or CHECKED_SERIES_SQL) with the given spans: each series' parts. */
  private async parts(query: SeriesQuery, spans: HistoryRange[], sql = SERIES_SQL, name = 'dashboard_series'): Promise<SeriesParts[]> {
    const rows = await this.sql.rows<PackedSeriesParts>(
      sql,
      [query.deviceId, query.from, query.to, ...spans.flatMap((span) => [span.from, span.to]), query.metrics, query.batteryId],
      name,
    );
    return rows.map(seriesParts);
  }

  /** The names from the rollups (METRIC_NAMES_SQL), as an export's snapshot reads them. */
  metricNames(query: RecordExportQuery): Promise<string[]> {
    return metricNamesOn(this.sql, query);
  }

  /**
   * A server-side cursor in a read-only snapshot, fetched `batchSize` records at a time: the metric
   * names and the records come from the same snapshot, and only one batch is in memory at once.
   * The snapshot's connection is returned by close(), also when the reader stops early.
   */
  async openExport(query: RecordExportQuery, batchSize: number): Promise<RecordExport> {
    // FETCH takes its count as a literal, not a parameter.
    if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, not ${batchSize}`);
    const snapshot = await this.sql.snapshot();
    try {
      const metrics = await metricNamesOn(snapshot, query);
      const windows = [...dayWindows(query.from, query.to)];
      const declare = (window: { from: Date; to: Date }) => snapshot.rows(EXPORT_CURSOR_SQL, [query.deviceId, window.from, window.to, query.batteryId]);
      // The first window's cursor before the answer starts, as the names: an export that cannot
      // start fails before its first byte.
      if (windows.length > 0) await declare(windows[0]);
      let started = false;
      return {
        metrics,
        async *batches() {
          if (started) throw new Error('An export is read once.');
          started = true;
          for (const [index, window] of windows.entries()) {
            if (index > 0) {
              await snapshot.rows('CLOSE telemetry_export');
              await declare(window);
            }
            for (;;) {
              const rows = await snapshot.rows<ExportRow>(`FETCH FORWARD ${batchSize} FROM telemetry_export`);
              if (rows.length > 0) yield rows.map((row): RawRecordRow => ({ battery_id: row.battery_id, ts: new Date(row.ts_ms), metrics: row.metrics }));
              if (rows.length < batchSize) break;
            }
          }
        },
        close: () => snapshot.close(),
      };
    } catch (error) {
      await snapshot.close();
      throw error;
    }
  }

  /** The records themselves, ascending, keyset-paginated on (ts, batteryId): a day window at a time until the page is full. */
  async raw(query: RawRecordsQuery): Promise<RawRecordRow[]> {
    const page: RawRecordRow[] = [];
    const from = query.after && query.after.ts > query.from ? query.after.ts : query.from;
    for (const window of dayWindows(from, query.to)) {
      const rows = await this.sql.rows<RawRecordRow>(
        RAW_PAGE_SQL,
        [query.deviceId, window.from, window.to, query.batteryId, query.after?.ts ?? null, query.after?.batteryId ?? '', query.limit - page.length],
        'telemetry_raw_page',
      );
      page.push(...rows);
      if (page.length >= query.limit) break;
    }
    return page;
  }
}

/**
 * The metric names of the query's records (METRIC_NAMES_SQL) on `runner`, in code point order;
 * named, so each connection plans it once (a fleet export reads it twice per device).
 */
async function metricNamesOn(runner: SqlRunner, query: RecordExportQuery): Promise<string[]> {
  const spans = rollupSpans(query, 86_400);
  const params = [query.deviceId, query.from, query.to, ...spans.flatMap((span) => [span.from, span.to]), query.batteryId];
  const names = await runner.rows<{ metric: string }>(METRIC_NAMES_SQL, params, 'telemetry_metric_names');
  return names.map((row) => row.metric).sort(byCodePoint);
}
