import { DAY, HOUR, MINUTE, iso, type TelemetryRecordBody, type TelemetryRow } from './telemetry.js';

/**
 * Battery figures computed in the tests, independently of the service's code, from the records
 * as stored: what the battery tests compare the service's answers with.
 */

export interface Totals {
  chargedAh: number;
  dischargedAh: number;
  chargedWh: number;
  dischargedWh: number;
  coveredMs: number;
}

export const zero = (): Totals => ({ chargedAh: 0, dischargedAh: 0, chargedWh: 0, dischargedWh: 0, coveredMs: 0 });
const SEGMENT_MS = 15 * MINUTE;

/**
 * The reference: every segment of at most 15 minutes cut at each bucket edge and at each zero of
 * the current and of the power (straight lines between the records), each piece's trapezoid added
 * to charge or discharge by its sign. Counters, where both ends have them, spread their increase
 * (a decrease: a reset, the new count) evenly over the segment, Wh at the segment's mean voltage.
 */
export function referenceEnergy(rows: TelemetryRow[], from: number, to: number, bucketMs: number): Map<number, Totals> {
  const buckets = new Map<number, Totals>();
  for (let start = from; start < to; start += bucketMs) buckets.set(start, zero());
  const points = rows
    .filter((row) => 'current' in row.metrics || 'chargedAhTotal' in row.metrics)
    .map((row): { ts: number } & Partial<Record<'current' | 'voltage' | 'chargedAhTotal' | 'dischargedAhTotal', number>> => ({ ts: row.ts.getTime(), ...row.metrics }))
    .sort((a, b) => a.ts - b.ts);
  for (let i = 1; i < points.length; i += 1) {
    const a = points[i - 1];
    const b = points[i];
    const span = b.ts - a.ts;
    if (span > SEGMENT_MS) continue;
    const line = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined ? undefined : (t: number) => x + ((y - x) * (t - a.ts)) / span);
    const current = line(a.current, b.current);
    const counters = a.chargedAhTotal !== undefined && b.chargedAhTotal !== undefined;
    const power = a.voltage !== undefined && b.voltage !== undefined && current && !counters ? line(a.voltage * a.current!, b.voltage * b.current!) : undefined;
    const breaks = new Set([a.ts, b.ts]);
    for (let edge = Math.ceil(a.ts / bucketMs) * bucketMs; edge < b.ts; edge += bucketMs) breaks.add(edge);
    for (const [x, y] of [
      [a.current, b.current],
      [power?.(a.ts), power?.(b.ts)],
    ]) {
      if (x !== undefined && y !== undefined && x * y < 0) breaks.add(a.ts + (span * x) / (x - y));
    }
    const cuts = [...breaks].filter((t) => t >= from && t <= to).sort((p, q) => p - q);
    for (let k = 1; k < cuts.length; k += 1) {
      const [p, q] = [cuts[k - 1], cuts[k]];
      const bucket = buckets.get(Math.floor(p / bucketMs) * bucketMs);
      if (!bucket) continue;
      const hours = (q - p) / HOUR;
      if (counters) {
        const increase = (x: number, y: number) => (y >= x ? y - x : y);
        bucket.chargedAh += (increase(a.chargedAhTotal!, b.chargedAhTotal!) * (q - p)) / span;
        bucket.dischargedAh += (increase(a.dischargedAhTotal!, b.dischargedAhTotal!) * (q - p)) / span;
      } else {
        const ah = ((current!(p) + current!(q)) / 2) * hours;
        if (ah >= 0) bucket.chargedAh += ah;
        else bucket.dischargedAh -= ah;
      }
      if (power) {
        const wh = ((power(p) + power(q)) / 2) * hours;
        if (wh >= 0) bucket.chargedWh += wh;
        else bucket.dischargedWh -= wh;
      } else if (counters && a.voltage !== undefined && b.voltage !== undefined) {
        const increase = (x: number, y: number) => (y >= x ? y - x : y);
        const meanVoltage = (a.voltage + b.voltage) / 2;
        bucket.chargedWh += ((increase(a.chargedAhTotal!, b.chargedAhTotal!) * (q - p)) / span) * meanVoltage;
        bucket.dischargedWh += ((increase(a.dischargedAhTotal!, b.dischargedAhTotal!) * (q - p)) / span) * meanVoltage;
      }
      bucket.coveredMs += q - p;
    }
  }
  return buckets;
}

/** Compares the service's buckets (absent: no data) with the reference's, to 1e-9 relative. */
export function expectBuckets(actual: Array<Totals & { start: number }>, expected: Map<number, Totals>): void {
  const byStart = new Map(actual.map((bucket) => [bucket.start, bucket]));
  for (const start of byStart.keys()) expect(expected.has(start)).toBe(true);
  for (const [start, want] of expected) {
    const got = byStart.get(start) ?? { start, ...zero() };
    for (const key of ['chargedAh', 'dischargedAh', 'chargedWh', 'dischargedWh', 'coveredMs'] as const) {
      expect({ start: iso(start), key, value: got[key] }).toEqual({ start: iso(start), key, value: expect.closeTo(want[key], Math.max(0, 9 - Math.ceil(Math.log10(Math.abs(want[key]) + 1)))) });
    }
  }
}

/** Three days every 2 minutes, ending an hour ago: solar charge by day, a load by night, a 40-minute gap on day 2. */
export function aSolarTrace(end: number): TelemetryRecordBody[] {
  const records: TelemetryRecordBody[] = [];
  const start = end - 3 * DAY;
  for (let ts = start; ts < end; ts += 2 * MINUTE) {
    if (ts > start + DAY + 5 * HOUR && ts < start + DAY + 5 * HOUR + 40 * MINUTE) continue;
    const hour = new Date(ts).getUTCHours() + new Date(ts).getUTCMinutes() / 60;
    const sun = Math.max(0, Math.sin((Math.PI * (hour - 6)) / 12));
    const current = Math.round((sun * 30 - 6 + 2 * Math.sin(ts / 7e5)) * 1000) / 1000;
    const voltage = Math.round((13 + current * 0.02 + 0.3 * Math.sin(ts / 3e6)) * 1000) / 1000;
    records.push({ ts: iso(ts), metrics: { current, voltage, soc: 50 + 40 * sun } });
  }
  return records;
}

/** The same records shuffled (seeded), with some sent twice. */
export function shuffled(records: TelemetryRecordBody[]): TelemetryRecordBody[] {
  let seed = 42;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const copy = [...records, ...records.filter((_, i) => i % 97 === 0)];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

/** The battery health figures from stored records: SoC turns by zigzag, time beyond thresholds per segment. */
export interface ReferenceHealth {
  depthOfDischargeHistogram: number[];
  timeAboveSoc90Sec: number;
  timeBelowSoc20Sec: number;
  timeAboveTemperature45Sec: number;
  minSoc: number | null;
  maxTemperature: number | null;
  maxCellImbalanceV: number | null;
}

export function referenceHealth(rows: TelemetryRow[]): ReferenceHealth {
  const sorted = [...rows].sort((a, b) => a.ts.getTime() - b.ts.getTime());
  const seriesOf = (metric: string) => sorted.filter((row) => metric in row.metrics).map((row) => ({ ts: row.ts.getTime(), value: row.metrics[metric] }));
  const soc = seriesOf('soc');
  const temperature = seriesOf('temperature');

  // Turning points: an extreme is confirmed once the SoC has moved 1 point back from it.
  const turns: Array<{ kind: 'max' | 'min'; value: number }> = [];
  let direction: 'up' | 'down' | null = null;
  let extreme = soc[0]?.value ?? 0;
  for (const { value } of soc.slice(1)) {
    if (direction !== 'down' && value > extreme) extreme = value;
    else if (direction !== 'up' && direction !== null && value < extreme) extreme = value;
    if (direction !== 'down' && extreme - value >= 1) {
      turns.push({ kind: 'max', value: extreme });
      direction = 'down';
      extreme = value;
    } else if (direction === 'down' && value - extreme >= 1) {
      turns.push({ kind: 'min', value: extreme });
      direction = 'up';
      extreme = value;
    }
  }
  const histogram = new Array<number>(10).fill(0);
  for (let i = 1; i < turns.length; i += 1) {
    if (turns[i - 1].kind === 'max' && turns[i].kind === 'min') histogram[Math.min(9, Math.floor((turns[i - 1].value - turns[i].value) / 10))] += 1;
  }

  const beyond = (series: Array<{ ts: number; value: number }>, threshold: number, sign: 1 | -1) => {
    let ms = 0;
    for (let i = 1; i < series.length; i += 1) {
      const span = series[i].ts - series[i - 1].ts;
      if (span > 15 * MINUTE) continue;
      const a = sign * (series[i - 1].value - threshold);
      const b = sign * (series[i].value - threshold);
      if (a > 0 && b > 0) ms += span;
      else if (a > 0) ms += (span * a) / (a - b);
      else if (b > 0) ms += (span * b) / (b - a);
    }
    return ms / 1000;
  };
  const imbalances = sorted.filter((row) => 'cellVoltageMin' in row.metrics && 'cellVoltageMax' in row.metrics).map((row) => row.metrics.cellVoltageMax - row.metrics.cellVoltageMin);
  return {
    depthOfDischargeHistogram: histogram,
    timeAboveSoc90Sec: beyond(soc, 90, 1),
    timeBelowSoc20Sec: beyond(soc, 20, -1),
    timeAboveTemperature45Sec: beyond(temperature, 45, 1),
    minSoc: soc.length ? Math.min(...soc.map((point) => point.value)) : null,
    maxTemperature: temperature.length ? Math.max(...temperature.map((point) => point.value)) : null,
    maxCellImbalanceV: imbalances.length ? Math.max(...imbalances) : null,
  };
}
