import type { SeriesRow } from './telemetry-history.queries.js';

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
