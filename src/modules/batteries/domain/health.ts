import { inTimeOrder, MAX_SEGMENT_MS } from './energy.js';

/** What the ageing figures read of one record. */
export interface HealthSample {
  ts: number;
  soc?: number;
  temperature?: number;
  cellVoltageMin?: number;
  cellVoltageMax?: number;
  soh?: number;
}

/**
 * A change of direction of the SoC counts only once the SoC has moved this far (percentage
 * points) from its last extreme, so measurement noise makes no cycles.
 */
export const SOC_HYSTERESIS = 1;
export const DOD_BINS = 10;

export interface HealthFigures {
  /** Discharge depths (local SoC maximum to the next minimum) in bins of 10 %: [0, 10), …, [90, 100]. */
  depthOfDischargeHistogram: number[];
  timeAboveSoc90Sec: number;
  timeBelowSoc20Sec: number;
  timeAboveTemperature45Sec: number;
  minSoc: number | null;
  maxTemperature: number | null;
  maxCellImbalanceV: number | null;
  /** The last `soh` of each UTC day that has one. */
  soh: Array<{ ts: number; value: number }>;
}

/**
 * Milliseconds, within segments of at most MAX_SEGMENT_MS, that the metric read as a straight line
 * between consecutive records spends above `threshold` (`above`) or below it.
 */
export function timeBeyond(samples: readonly { ts: number; value: number }[], threshold: number, above: boolean): number {
  let total = 0;
  for (let i = 1; i < samples.length; i += 1) {
    const a = samples[i - 1];
    const b = samples[i];
    const duration = b.ts - a.ts;
    if (duration <= 0 || duration > MAX_SEGMENT_MS) continue;
    // Distances past the threshold, positive where the metric is beyond it.
    const da = above ? a.value - threshold : threshold - a.value;
    const db = above ? b.value - threshold : threshold - b.value;
    if (da > 0 && db > 0) total += duration;
    else if (da > 0 || db > 0) total += (duration * Math.max(da, db)) / Math.abs(da - db);
  }
  return total;
}

/**
 * The depths of the discharges in a SoC series: each fall from a local maximum to the following
 * local minimum, where a turn counts once the SoC moved SOC_HYSTERESIS back from the extreme. A
 * fall still under way at the end of the series is no cycle yet and is left out.
 */
export function dischargeDepths(socs: readonly number[]): number[] {
  const depths: number[] = [];
  if (socs.length === 0) return depths;
  let high = socs[0];
  let low = socs[0];
  let falling: boolean | null = null;
  for (const soc of socs.slice(1)) {
    if (falling !== true) {
      if (soc > high) high = soc;
      else if (high - soc >= SOC_HYSTERESIS) {
        falling = true;
        low = soc;
      }
    } else if (soc < low) low = soc;
    else if (soc - low >= SOC_HYSTERESIS) {
      depths.push(high - low);
      falling = false;
      high = soc;
    }
  }
  return depths;
}

export function histogramOf(depths: readonly number[]): number[] {
  const bins = new Array<number>(DOD_BINS).fill(0);
  for (const depth of depths) bins[Math.min(DOD_BINS - 1, Math.max(0, Math.floor(depth / 10)))] += 1;
  return bins;
}

const DAY_MS = 86_400_000;

/** The ageing figures of one battery's records (any order; repeats of an instant count once). */
export function healthOf(records: readonly HealthSample[]): HealthFigures {
  const sorted = inTimeOrder(records);
  const series = (pick: (sample: HealthSample) => number | undefined) =>
    sorted.flatMap((sample) => {
      const value = pick(sample);
      return value === undefined ? [] : [{ ts: sample.ts, value }];
    });
  const soc = series((sample) => sample.soc);
  const temperature = series((sample) => sample.temperature);
  const imbalance = sorted.flatMap((sample) => (sample.cellVoltageMin !== undefined && sample.cellVoltageMax !== undefined ? [sample.cellVoltageMax - sample.cellVoltageMin] : []));
  const sohByDay = new Map<number, { ts: number; value: number }>();
  for (const point of series((sample) => sample.soh)) sohByDay.set(Math.floor(point.ts / DAY_MS), point);
  const max = (values: number[]) => (values.length === 0 ? null : values.reduce((x, y) => Math.max(x, y)));
  return {
    depthOfDischargeHistogram: histogramOf(dischargeDepths(soc.map((point) => point.value))),
    timeAboveSoc90Sec: timeBeyond(soc, 90, true) / 1000,
    timeBelowSoc20Sec: timeBeyond(soc, 20, false) / 1000,
    timeAboveTemperature45Sec: timeBeyond(temperature, 45, true) / 1000,
    minSoc: soc.length === 0 ? null : soc.reduce((x, point) => Math.min(x, point.value), Infinity),
    maxTemperature: max(temperature.map((point) => point.value)),
    maxCellImbalanceV: max(imbalance),
    soh: [...sohByDay.values()],
  };
}
