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
