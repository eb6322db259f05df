import { ValidationFailedError } from '../../../shared/domain-error.js';
import { ROLLUP_LEVELS } from './rollup-levels.js';
import { BATTERY_ID_PATTERN, METRIC_NAME, parseIsoInstant } from './telemetry-record.js';

export const AUTO_BUCKETS_SEC = [60, 300, 900, 3600, 21_600, 86_400];
export const MAX_POINTS_AUTO = 500;
/** An explicit bucket may ask for more points than auto would, but not without bound. */
export const MAX_POINTS_EXPLICIT = 5000;
export const MAX_RANGE_DAYS = 366;

export type BucketChoice = { kind: 'raw' } | { kind: 'seconds'; seconds: number } | { kind: 'auto' };

/** The smallest standard bucket that keeps every series at ≤ 500 points. */
export function autoBucketSec(fromMs: number, toMs: number): number {
  const rangeSec = (toMs - fromMs) / 1000;
  return AUTO_BUCKETS_SEC.find((bucket) => Math.ceil(rangeSec / bucket) <= MAX_POINTS_AUTO) ?? AUTO_BUCKETS_SEC[AUTO_BUCKETS_SEC.length - 1];
}

export function parseBucket(raw: string | undefined): BucketChoice {
  if (raw === undefined || raw === 'auto') return { kind: 'auto' };
  if (raw === 'raw') return { kind: 'raw' };
  if (/^\d{1,9}$/.test(raw) && Number(raw) >= 1) return { kind: 'seconds', seconds: Number(raw) };
  throw new ValidationFailedError([{ field: 'bucket', message: 'bucket must be a number of seconds (≥ 1), auto or raw' }]);
}

/** One battery, or null for all. */
export function parseBatteryId(raw: string | undefined): string | null {
  if (raw !== undefined && !BATTERY_ID_PATTERN.test(raw)) {
    throw new ValidationFailedError([{ field: 'batteryId', message: 'batteryId must be 1–64 characters of A–Z a–z 0–9 . _ : -' }]);
  }
  return raw ?? null;
}

/** Comma-separated metric names, surrounding spaces and empty items ignored: 1–64 names. */
export function parseMetrics(raw: string): string[] {
  const names = raw.split(',').map((name) => name.trim()).filter(Boolean);
  if (names.length === 0 || names.length > 64 || names.some((name) => !METRIC_NAME.test(name))) {
    throw new ValidationFailedError([{ field: 'metrics', message: 'metrics must be 1–64 comma-separated metric names' }]);
  }
  return names;
}

export interface HistoryRange {
  from: Date;
  to: Date;
}

/** from inclusive, to exclusive; default the last 24 hours; at most 366 days. */
export function resolveRange(from: string | undefined, to: string | undefined, now: Date): HistoryRange {
  const end = to === undefined ? now : parseInstant(to, 'to');
  const start = from === undefined ? new Date(end.getTime() - 86_400_000) : parseInstant(from, 'from');
  if (start >= end) throw new ValidationFailedError([{ field: 'from', message: 'from must be before to' }]);
  if (end.getTime() - start.getTime() > MAX_RANGE_DAYS * 86_400_000) throw new ValidationFailedError([{ field: 'to', message: `the range may span at most ${MAX_RANGE_DAYS} days` }]);
  return { from: start, to: end };
}

export function parseInstant(value: string, field: string): Date {
  const date = parseIsoInstant(value);
  if (!date) {
    throw new ValidationFailedError([{ field, message: `${field} must be an ISO 8601 date-time with a time zone, e.g. 2026-11-21T12:00:00Z` }]);
  }
  return date;
}

/**
 * Which rollup level answers which part of [from, to). A level answers exactly where its slots lie
 * wholly inside the range and its width divides the bucket (buckets are epoch-aligned too). One
 * span per level, finest first, each inside the one before: level i reads spans[i] minus
 * spans[i + 1], and raw records answer the range minus spans[0] — the coarsest level that is exact
 * does the bulk, finer ones and raw records only the edges. A level that cannot answer gets an
 * empty span at the end of the span that encloses it.
 */
export function rollupSpans(range: HistoryRange, bucketSec: number): HistoryRange[] {
  const spans: HistoryRange[] = [];
  let enclosing = range;
  for (const { widthSec } of ROLLUP_LEVELS) {
    const slotMs = widthSec * 1000;
    const from = Math.ceil(range.from.getTime() / slotMs) * slotMs;
    const to = Math.floor(range.to.getTime() / slotMs) * slotMs;
    const span = bucketSec % widthSec === 0 && to > from ? { from: new Date(from), to: new Date(to) } : { from: enclosing.to, to: enclosing.to };
    spans.push(span);
    enclosing = span;
  }
  return spans;
}

/** A coarser rollup level's whole slots inside the range: each holds a whole number of buckets, and its rollup row counts their records. */
export interface CheckSlots {
  widthSec: number;
  /** Unix seconds, multiples of widthSec; to exclusive. */
  from: number;
  to: number;
}

/**
 * rollupSpans, plus the slots a history answer can be cut into: the first level too coarse to
 * answer buckets of `bucketSec` but a whole number of them wide (5-minute buckets: hours; hourly:
 * 6 hours; 6-hourly: days) reads its own span in place of the finer levels, so one statement gives
 * the buckets of the range's edges and one row per whole slot with its record count. Null where
 * no such level has a whole slot in the range: the spans are rollupSpans'.
 */
export function checkedSpans(range: HistoryRange, bucketSec: number): { spans: HistoryRange[]; check: CheckSlots } | null {
  const level = ROLLUP_LEVELS.findIndex(({ widthSec }) => bucketSec % widthSec !== 0);
  if (level < 0 || ROLLUP_LEVELS[level].widthSec % bucketSec !== 0) return null;
  const widthSec = ROLLUP_LEVELS[level].widthSec;
  const from = Math.ceil(range.from.getTime() / 1000 / widthSec) * widthSec;
  const to = Math.floor(range.to.getTime() / 1000 / widthSec) * widthSec;
  if (to <= from) return null;
  const spans = rollupSpans(range, bucketSec).slice(0, level);
  const check = { from: new Date(from * 1000), to: new Date(to * 1000) };
  return { spans: [...spans, check, ...ROLLUP_LEVELS.slice(level + 1).map(() => ({ from: check.to, to: check.to }))], check: { widthSec, from, to } };
}

/** The five-minute slots a range's unaligned ends cut (Unix seconds; null where that end is aligned). */
export interface EdgeSlots {
  widthSec: number;
  first: number | null;
  last: number | null;
}

/**
 * The five-minute slots whose records the answer of checkedSpans takes raw at the range's ends,
 * and its spans with the finest level's widened over them: a statement over those spans without
 * the raw records gives each edge slot's record count (its rollup row, or its compact day's slot)
 * as it gives the whole check slots', so the edge's records can be kept and checked alike. Null
 * where the finest level does not answer the buckets (its span is then the check slots').
 */
export function edgeSlots(range: HistoryRange, checked: { spans: HistoryRange[]; check: CheckSlots }): { spans: HistoryRange[]; slots: EdgeSlots } | null {
  const { widthSec } = ROLLUP_LEVELS[0];
  if (checked.check.widthSec === widthSec) return null;
  const slotMs = widthSec * 1000;
  const from = range.from.getTime();
  const to = range.to.getTime();
  const first = Math.floor(from / slotMs) * slotMs;
  const last = Math.floor(to / slotMs) * slotMs;
  const widened = { from: new Date(first), to: new Date(last === to ? to : last + slotMs) };
  return {
    spans: [widened, ...checked.spans.slice(1)],
    slots: { widthSec, first: first === from ? null : first / 1000, last: last === to ? null : last / 1000 },
  };
}
