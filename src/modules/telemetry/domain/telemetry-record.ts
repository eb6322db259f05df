export const METRIC_NAME = /^[a-z][a-zA-Z0-9_]{0,39}$/;
/** Battery ids appear in queries and cursors: the same safe characters as device ids. */
export const BATTERY_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

export { parseIsoInstant } from '../../../shared/kernel/iso-instant.js';
export const MAX_METRICS_PER_RECORD = 64;
export const DEFAULT_BATTERY_ID = 'main';
/** Gateway clocks drift; a little ahead of ours is tolerated, more is a broken clock. */
export const MAX_CLOCK_AHEAD_MS = 5 * 60 * 1000;

export interface TelemetryRecord {
  ts: Date;
  batteryId: string;
  metrics: Record<string, number>;
}

/**
 * Metric values a gateway can send: a magnitude of at most 1e12, and none below 1e-12 except 0.
 * No battery reading comes near either bound, and inside them every sum the rollups and history
 * compute stays finite (1e12 × a year of microsecond records is ~3e25) and every average stays
 * clear of float8 underflow (which PostgreSQL raises as an error for a nonzero quotient of 0).
 */
export const MAX_METRIC_MAGNITUDE = 1e12;
export const MIN_METRIC_MAGNITUDE = 1e-12;

/**
 * Why a record was not stored: its time (ahead of the clock, beyond retention), a value, or
 * CONFLICTS_WITH_STORED: a record of the same device, battery and time is stored with other metrics
 * (a gateway clock or sequence bug); the stored one stays. A retry with the same metrics is a
 * duplicate, not this.
 */
export type RejectionCode = 'TS_IN_FUTURE' | 'TS_BEYOND_RETENTION' | 'VALUE_OUT_OF_RANGE' | 'CONFLICTS_WITH_STORED';

export interface Rejection {
  index: number;
  code: RejectionCode;
}

/** Finite, and 0 (-0 included) or a magnitude within [MIN_METRIC_MAGNITUDE, MAX_METRIC_MAGNITUDE]. */
export function isStorableValue(value: number): boolean {
  const magnitude = Math.abs(value);
  return Number.isFinite(value) && magnitude <= MAX_METRIC_MAGNITUDE && (magnitude === 0 || magnitude >= MIN_METRIC_MAGNITUDE);
}

/**
 * Splits a batch into records to store and records rejected on their own: a timestamp more than
 * five minutes ahead of the server clock, older than the retention window, or a metric value that
 * is not finite or outside the bounds above.
 */
export function admit(records: TelemetryRecord[], now: Date, retentionDays: number): { accepted: Array<TelemetryRecord & { index: number }>; rejected: Rejection[] } {
  const latest = now.getTime() + MAX_CLOCK_AHEAD_MS;
  const earliest = now.getTime() - retentionDays * 86_400_000;
  const accepted: Array<TelemetryRecord & { index: number }> = [];
  const rejected: Rejection[] = [];
  records.forEach((record, index) => {
    const at = record.ts.getTime();
    if (at > latest) rejected.push({ index, code: 'TS_IN_FUTURE' });
    else if (at < earliest) rejected.push({ index, code: 'TS_BEYOND_RETENTION' });
    else if (!Object.values(record.metrics).every(isStorableValue)) rejected.push({ index, code: 'VALUE_OUT_OF_RANGE' });
    else accepted.push({ ...record, index });
  });
  return { accepted, rejected };
}
