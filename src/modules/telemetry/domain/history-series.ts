import type { BucketColumns, SeriesRow, SeriesRuns } from './telemetry-history.queries.js';
import type { CheckSlots } from './history-query.js';

export interface Point {
  ts: string;
  avg: number;
  min: number;
  max: number;
  count: number;
}

/**
 * One series of a bucket answer: its buckets in runs of columns, each run ascending by ts, the
 * runs one after another (SeriesRuns). Points are not built as objects: the HTTP layer writes
 * them straight from the columns (history-json.ts); pointsOf() builds them where objects are wanted.
 */
export interface Series {
  metric: string;
  batteryId: string;
  runs: readonly BucketColumns[];
}

/** The points of a series, ascending by ts, ts as this API writes every instant (ISO 8601 in UTC with milliseconds). */
export function pointsOf(series: Series): Point[] {
  return series.runs.flatMap(({ ts, avg, min, max, count }) => ts.map((t, i) => ({ ts: new Date(t * 1000).toISOString(), avg: avg[i], min: min[i], max: max[i], count: count[i] })));
}

/** A series whose buckets come in no particular order, as one run ascending by ts: the row's own columns when they are in order already, else copies. */
export function runsOf(row: SeriesRow, bucketSec: number): SeriesRuns {
  const order = ascendingByTs(row.ts, bucketSec);
  let inOrder = true;
  for (let k = 0; k < order.length && inOrder; k++) inOrder = order[k] === k;
  const pick = (column: number[]) => {
    if (inOrder) return column;
    const picked = new Array<number>(order.length);
    for (let k = 0; k < order.length; k++) picked[k] = column[order[k]];
    return picked;
  };
  return { battery_id: row.battery_id, metric: row.metric, runs: [{ ts: pick(row.ts), avg: pick(row.avg), min: pick(row.min), max: pick(row.max), count: pick(row.count) }] };
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

/**
 * One series as the series statement gives it: its parts (rollup slots of some level, compact
 * slots, raw records) as one array per column, aligned, in no particular order; `at` is a part's
 * start in Unix seconds.
 */
export interface SeriesParts {
  battery_id: string;
  metric: string;
  at: ArrayLike<number>;
  count: ArrayLike<number>;
  sum: ArrayLike<number>;
  min: ArrayLike<number>;
  max: ArrayLike<number>;
}

/**
 * The buckets of `bucketSec` seconds (epoch-aligned) of a series' parts, ascending. A bucket's sums
 * are added in time order (ties by value): floating-point addition depends on order, and the
 * order the parts arrive in depends on PostgreSQL's plan and on where rows lie on disk, so the same
 * records give the same answer to the last digit, as rows or compacted. Done here rather than in
 * the statement: sorting the parts there cost PostgreSQL ~1 ms per 7-day answer.
 */
export function bucketsOf(parts: SeriesParts, bucketSec: number): SeriesRow {
  const { at, count, sum, min, max } = parts;
  const row: SeriesRow = { battery_id: parts.battery_id, metric: parts.metric, ts: [], avg: [], min: [], max: [], count: [] };
  const sums: number[] = [];
  for (const i of inTimeOrder(at, sum, count, bucketSec)) {
    const bucket = Math.floor(at[i] / bucketSec) * bucketSec;
    const last = row.ts.length - 1;
    if (last < 0 || row.ts[last] !== bucket) {
      row.ts.push(bucket);
      sums.push(sum[i]);
      row.count.push(count[i]);
      row.min.push(min[i]);
      row.max.push(max[i]);
    } else {
      sums[last] += sum[i];
      row.count[last] += count[i];
      if (min[i] < row.min[last]) row.min[last] = min[i];
      if (max[i] > row.max[last]) row.max[last] = max[i];
    }
  }
  row.avg = sums.map((total, k) => total / row.count[k]);
  return row;
}

/**
 * The indices of the parts by bucket, and within a bucket by time (ties by sum, then count). Most
 * buckets hold one or two parts, whose sum does not depend on order, so the parts are placed by
 * bucket in one pass (as ascendingByTs places points) and only buckets of three or more are
 * sorted: sorting every part cost ~0.3 ms per 24-hour answer.
 */
function inTimeOrder(at: ArrayLike<number>, sum: ArrayLike<number>, count: ArrayLike<number>, bucketSec: number): Int32Array {
  const n = at.length;
  const byTime = (a: number, b: number) => at[a] - at[b] || sum[a] - sum[b] || count[a] - count[b];
  const slotOf = new Float64Array(n);
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < n; i++) {
    slotOf[i] = Math.floor(at[i] / bucketSec);
    if (slotOf[i] < first) first = slotOf[i];
    if (slotOf[i] > last) last = slotOf[i];
  }
  const slots = n === 0 ? 0 : last - first + 1;
  if (slots > 16 * n + 1024) return Int32Array.from({ length: n }, (_, i) => i).sort(byTime);
  const start = new Int32Array(slots + 1);
  for (let i = 0; i < n; i++) start[slotOf[i] - first + 1] += 1;
  for (let k = 0; k < slots; k++) start[k + 1] += start[k];
  const order = new Int32Array(n);
  const next = start.slice(0, slots);
  for (let i = 0; i < n; i++) order[next[slotOf[i] - first]++] = i;
  for (let k = 0; k < slots; k++) if (start[k + 1] - start[k] > 2) order.subarray(start[k], start[k + 1]).sort(byTime);
  return order;
}

/** A series' parts as the statement of checkedSpans gives them: those before and after its whole slots, and each slot's record count. */
export interface CheckedParts {
  before: SeriesParts;
  after: SeriesParts;
  /** Slot start (Unix seconds) → the records of the series in it. */
  slots: Map<number, number>;
}

/** Splits a series' parts at the check slots: every part inside them is a slot's count (of the check level's rows, or of several parts of one slot). */
export function cutAtSlots(parts: SeriesParts, check: CheckSlots): CheckedParts {
  const before: number[] = [];
  const after: number[] = [];
  const slots = new Map<number, number>();
  for (let i = 0; i < parts.at.length; i++) {
    const at = parts.at[i];
    if (at < check.from) before.push(i);
    else if (at >= check.to) after.push(i);
    else {
      const slot = Math.floor(at / check.widthSec) * check.widthSec;
      slots.set(slot, (slots.get(slot) ?? 0) + parts.count[i]);
    }
  }
  return { before: pickParts(parts, before), after: pickParts(parts, after), slots };
}

/** The parts at `indices`, in that order. */
function pickParts(parts: SeriesParts, indices: number[]): SeriesParts {
  const pick = (column: ArrayLike<number>) => {
    const picked = new Float64Array(indices.length);
    for (let k = 0; k < indices.length; k++) picked[k] = column[indices[k]];
    return picked;
  };
  return { battery_id: parts.battery_id, metric: parts.metric, at: pick(parts.at), count: pick(parts.count), sum: pick(parts.sum), min: pick(parts.min), max: pick(parts.max) };
}

/** Buckets ascending by ts, cut into slots of widthSec seconds: per slot start, its buckets and their record count. */
export function slotRuns(buckets: BucketColumns, widthSec: number): Map<number, { run: BucketColumns; count: number }> {
  const runs = new Map<number, { run: BucketColumns; count: number }>();
  let start = 0;
  while (start < buckets.ts.length) {
    const slot = Math.floor(buckets.ts[start] / widthSec) * widthSec;
    let end = start;
    let count = 0;
    while (end < buckets.ts.length && buckets.ts[end] < slot + widthSec) count += buckets.count[end++];
    const cut = (column: number[]) => column.slice(start, end);
    runs.set(slot, { run: { ts: cut(buckets.ts), avg: cut(buckets.avg), min: cut(buckets.min), max: cut(buckets.max), count: cut(buckets.count) }, count });
    start = end;
  }
  return runs;
}

/** A series' parts without those starting at one of `slots` (Unix seconds), and those slots' record counts (of the slots that have parts). */
export function takeSlots(parts: SeriesParts, slots: readonly number[]): { rest: SeriesParts; counts: Map<number, number> } {
  const counts = new Map<number, number>();
  const rest: number[] = [];
  for (let i = 0; i < parts.at.length; i++) {
    if (slots.includes(parts.at[i])) counts.set(parts.at[i], (counts.get(parts.at[i]) ?? 0) + parts.count[i]);
    else rest.push(i);
  }
  return { rest: rest.length === parts.at.length ? parts : pickParts(parts, rest), counts };
}

/**
 * A series' parts without those inside one of `slots` (Unix seconds, each `widthSec` wide), and
 * those, by slot, as records: the parts the raw arms give of whole edge slots.
 */
export function takeRecords(parts: SeriesParts, slots: readonly number[], widthSec: number): { rest: SeriesParts; records: Map<number, SlotRecords> } {
  const bySlot = new Map<number, number[]>();
  const rest: number[] = [];
  for (let i = 0; i < parts.at.length; i++) {
    const slot = slots.find((start) => parts.at[i] >= start && parts.at[i] < start + widthSec);
    if (slot === undefined) rest.push(i);
    else {
      let indices = bySlot.get(slot);
      if (indices === undefined) bySlot.set(slot, (indices = []));
      indices.push(i);
    }
  }
  const records = new Map<number, SlotRecords>();
  for (const [slot, indices] of bySlot) records.set(slot, slotRecords(pickParts(parts, indices)));
  return { rest: rest.length === parts.at.length ? parts : pickParts(parts, rest), records };
}

/** One series' records of a slot as kept between answers: each instant (Unix seconds, with its microseconds) and value. */
export interface SlotRecords {
  ts: number[];
  values: number[];
  /** Held in memory and shared by answers: nobody may change it. */
  shared?: true;
}

/** The records among a series' parts: the raw arms' parts, one per record (count 1, its value as sum, min and max). */
export function slotRecords(parts: SeriesParts): SlotRecords {
  for (let i = 0; i < parts.at.length; i++) {
    if (parts.count[i] !== 1 || parts.min[i] !== parts.sum[i] || parts.max[i] !== parts.sum[i]) throw new RangeError('not a record: a part of several records');
  }
  return { ts: Array.from(parts.at), values: Array.from(parts.sum) };
}

/**
 * `parts` with the records of `kept` in [fromMs, toMs) added, as the parts of raw records. An
 * instant is compared in whole microseconds, as PostgreSQL compares it: its Unix seconds are a
 * double whose error is far below half a microsecond.
 */
export function withRecordsIn(parts: SeriesParts, kept: SlotRecords | undefined, fromMs: number, toMs: number): SeriesParts {
  if (kept === undefined) return parts;
  const inside: number[] = [];
  for (let k = 0; k < kept.ts.length; k++) {
    const micros = Math.round(kept.ts[k] * 1e6);
    if (micros >= fromMs * 1000 && micros < toMs * 1000) inside.push(k);
  }
  if (inside.length === 0) return parts;
  const joined = (column: ArrayLike<number>, value: (k: number) => number) => {
    const values = Array.from(column);
    for (const k of inside) values.push(value(k));
    return values;
  };
  const value = (k: number) => kept.values[k];
  return { battery_id: parts.battery_id, metric: parts.metric, at: joined(parts.at, (k) => kept.ts[k]), count: joined(parts.count, () => 1), sum: joined(parts.sum, value), min: joined(parts.min, value), max: joined(parts.max, value) };
}
