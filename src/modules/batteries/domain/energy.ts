import { CHARGE_SEGMENT_MINUTES } from '../../../shared/kernel/charge-metrics.js';

/**
 * Energy accounting of one battery from its records: charge and energy in and out,
 * integrated between consecutive records by the trapezoidal rule, split exactly at bucket edges
 * and at the instant the current (or the power) changes sign.
 *
 * Pure functions over the records of one battery: the same records give the same figures in any
 * order of arrival, which is what keeps the stored buckets exact under late and out-of-order
 * batches (a bucket is recomputed from its records, never adjusted by differences).
 */

/** Energy buckets an answer may use, seconds: 1 h, 1 d, 7 d, 30 d (UTC, aligned to the Unix epoch). */
export const ENERGY_BUCKETS = { '1h': 3_600, '1d': 86_400, '7d': 604_800, '30d': 2_592_000 } as const;
export type EnergyBucketName = keyof typeof ENERGY_BUCKETS;
/** At most this many points per energy answer (1 h buckets over 366 days fit). */
export const MAX_ENERGY_POINTS = 9_000;

/** Consecutive records further apart than this contribute nothing: the time between is a gap. */
export const MAX_SEGMENT_MS = CHARGE_SEGMENT_MINUTES * 60_000;

/** What energy accounting reads of one record; every metric optional. */
export interface EnergySample {
  /** Milliseconds since the Unix epoch. */
  ts: number;
  /** A, positive = charging (docs/api.md, well-known metrics). */
  current?: number;
  /** V */
  voltage?: number;
  /** The gateway's own cumulative counters, Ah; they win over the integrated current. */
  chargedAhTotal?: number;
  dischargedAhTotal?: number;
}

export interface EnergyTotals {
  chargedAh: number;
  dischargedAh: number;
  chargedWh: number;
  dischargedWh: number;
  /** Milliseconds of the span covered by segments (consecutive records at most MAX_SEGMENT_MS apart). */
  coveredMs: number;
}

export const NO_ENERGY: Readonly<EnergyTotals> = Object.freeze({ chargedAh: 0, dischargedAh: 0, chargedWh: 0, dischargedWh: 0, coveredMs: 0 });

/**
 * The integral over [0, duration] of the straight line from `start` to `end`, as its positive and
 * negative parts (both ≥ 0): split where the line crosses zero, so charge and discharge within one
 * segment do not cancel out.
 */
export function signedArea(start: number, end: number, duration: number): { positive: number; negative: number } {
  if (start >= 0 && end >= 0) return { positive: ((start + end) / 2) * duration, negative: 0 };
  if (start <= 0 && end <= 0) return { positive: 0, negative: (-(start + end) / 2) * duration };
  // Clamped: rounding can put the crossing a hair outside the segment when one end is nearly 0.
  const zeroAt = Math.min(duration, Math.max(0, (duration * start) / (start - end)));
  const first = Math.abs(start / 2) * zeroAt;
  const second = Math.abs(end / 2) * (duration - zeroAt);
  return start > 0 ? { positive: first, negative: second } : { positive: second, negative: first };
}

/** The increase of a cumulative counter from `before` to `after`; a decrease is a reset, after which the counter counted `after` from zero. */
export function counterIncrease(before: number, after: number): number {
  return after >= before ? after - before : after;
}

const HOUR_MS = 3_600_000;

/** A straight line through (x0, y0) and (x1, y1), read at x. */
const along = (x0: number, y0: number, x1: number, y1: number, x: number) => y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);

/**
 * The energy of the segment from `a` to `b` (a.ts < b.ts) that falls between `t0` and `t1`
 * (a.ts ≤ t0 < t1 ≤ b.ts), or null when the records are too far apart or lack what the figures
 * need. Parts of one segment add up to the whole exactly: current and power are straight lines
 * between the records (the trapezoidal rule), and counted Ah are spread evenly over the segment.
 * Ah: from the counters when both records hold them, else from `current` at both ends. Wh: with
 * counters, the counted Ah times the segment's mean voltage; else from the power `voltage ×
 * current` at both ends. Without voltage at both ends, no Wh.
 */
export function segmentEnergy(a: EnergySample, b: EnergySample, t0 = a.ts, t1 = b.ts): EnergyTotals | null {
  if (b.ts - a.ts <= 0 || b.ts - a.ts > MAX_SEGMENT_MS || t1 <= t0) return null;
  const hours = (t1 - t0) / HOUR_MS;
  const share = (t1 - t0) / (b.ts - a.ts);
  const hasCurrent = a.current !== undefined && b.current !== undefined;
  const hasVoltage = a.voltage !== undefined && b.voltage !== undefined;
  const hasCounters = a.chargedAhTotal !== undefined && b.chargedAhTotal !== undefined && a.dischargedAhTotal !== undefined && b.dischargedAhTotal !== undefined;
  if (!hasCurrent && !hasCounters) return null;

  let chargedAh: number;
  let dischargedAh: number;
  if (hasCounters) {
    chargedAh = counterIncrease(a.chargedAhTotal!, b.chargedAhTotal!) * share;
    dischargedAh = counterIncrease(a.dischargedAhTotal!, b.dischargedAhTotal!) * share;
  } else {
    const charge = signedArea(along(a.ts, a.current!, b.ts, b.current!, t0), along(a.ts, a.current!, b.ts, b.current!, t1), hours);
    chargedAh = charge.positive;
    dischargedAh = charge.negative;
  }

  let chargedWh = 0;
  let dischargedWh = 0;
  if (hasVoltage && !hasCounters) {
    const powerA = a.voltage! * a.current!;
    const powerB = b.voltage! * b.current!;
    const energy = signedArea(along(a.ts, powerA, b.ts, powerB, t0), along(a.ts, powerA, b.ts, powerB, t1), hours);
    chargedWh = energy.positive;
    dischargedWh = energy.negative;
  } else if (hasVoltage) {
    const meanVoltage = (a.voltage! + b.voltage!) / 2;
    chargedWh = chargedAh * meanVoltage;
    dischargedWh = dischargedAh * meanVoltage;
  }
  return { chargedAh, dischargedAh, chargedWh, dischargedWh, coveredMs: t1 - t0 };
}

export function addEnergy(into: EnergyTotals, more: EnergyTotals): void {
  into.chargedAh += more.chargedAh;
  into.dischargedAh += more.dischargedAh;
  into.chargedWh += more.chargedWh;
  into.dischargedWh += more.dischargedWh;
  into.coveredMs += more.coveredMs;
}

/** Records sorted by time, one per instant (the first of equal instants kept, as ingest keeps the first stored). */
export function inTimeOrder<T extends { ts: number }>(samples: readonly T[]): T[] {
  const sorted = [...samples].sort((x, y) => x.ts - y.ts);
  return sorted.filter((sample, i) => i === 0 || sample.ts !== sorted[i - 1].ts);
}

/**
 * The energy of `samples` (any order) per bucket of `bucketMs` aligned to the Unix epoch, for the
 * buckets from `from` (inclusive) to `to` (exclusive), both bucket edges. A segment crossing an edge
 * is cut there, so each bucket holds exactly its part. Segments or parts
 * outside [from, to) are left out. Added to `into` when given: records read in consecutive pages,
 * each page starting with the last record of the one before, give exactly (to the bit) the figures
 * of one read.
 */
export function energyPerBucket(samples: readonly EnergySample[], from: number, to: number, bucketMs: number, into?: Map<number, EnergyTotals>): Map<number, EnergyTotals> {
  const buckets = into ?? new Map<number, EnergyTotals>();
  for (let start = from; start < to; start += bucketMs) if (!buckets.has(start)) buckets.set(start, { ...NO_ENERGY });
  const sorted = inTimeOrder(samples);
  for (let i = 1; i < sorted.length; i += 1) {
    const a = sorted[i - 1];
    const b = sorted[i];
    if (b.ts - a.ts > MAX_SEGMENT_MS || b.ts <= from || a.ts >= to) continue;
    // The segment's part in each bucket it crosses, cut at the bucket edges.
    for (let t0 = Math.max(a.ts, from); t0 < Math.min(b.ts, to); ) {
      const bucketStart = Math.floor(t0 / bucketMs) * bucketMs;
      const t1 = Math.min(bucketStart + bucketMs, b.ts, to);
      const energy = segmentEnergy(a, b, t0, t1);
      if (energy) addEnergy(buckets.get(bucketStart)!, energy);
      t0 = t1;
    }
  }
  return buckets;
}

/** The gaps of `samples` (any order) inside [from, to): spans between consecutive records more than MAX_SEGMENT_MS apart, clipped to the range. */
export function gapsOf(samples: readonly EnergySample[], from: number, to: number): Array<{ from: number; to: number }> {
  const sorted = inTimeOrder(samples);
  const gaps: Array<{ from: number; to: number }> = [];
  for (let i = 1; i < sorted.length; i += 1) {
    const start = Math.max(sorted[i - 1].ts, from);
    const end = Math.min(sorted[i].ts, to);
    if (sorted[i].ts - sorted[i - 1].ts > MAX_SEGMENT_MS && start < end) gaps.push({ from: start, to: end });
  }
  return gaps;
}
