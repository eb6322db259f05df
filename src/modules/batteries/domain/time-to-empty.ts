import { inTimeOrder, MAX_SEGMENT_MS } from './energy.js';

/** The window the current is averaged over. */
export const AVERAGE_WINDOW_MS = 15 * 60_000;
/**
 * Below this share of the capacity per hour (C/1000: 0.1 A for a 100 Ah battery) the battery
 * counts as idle, and neither estimate is given: it would run to months and mean nothing.
 */
export const IDLE_C_RATE = 0.001;

/**
 * The time-weighted average current of the records of the last AVERAGE_WINDOW_MS up to the newest
 * (trapezoidal, over segments of at most MAX_SEGMENT_MS), or the newest current alone when it is
 * the only one in the window; null without any.
 */
export function averageCurrent(records: readonly { ts: number; current?: number }[]): number | null {
  const sorted = inTimeOrder(records.filter((record) => record.current !== undefined));
  if (sorted.length === 0) return null;
  const newest = sorted[sorted.length - 1];
  const window = sorted.filter((record) => record.ts >= newest.ts - AVERAGE_WINDOW_MS);
  let area = 0;
  let duration = 0;
  for (let i = 1; i < window.length; i += 1) {
    const span = window[i].ts - window[i - 1].ts;
    if (span > MAX_SEGMENT_MS) continue;
    area += ((window[i - 1].current! + window[i].current!) / 2) * span;
    duration += span;
  }
  return duration > 0 ? area / duration : newest.current!;
}

/**
 * Seconds until empty (discharging) or full (charging) at the average current, from the profile's
 * capacity and the latest SoC; neither when either is unknown or the battery is idle.
 */
export function timeToEmptyOrFull(capacityAh: number | null, soc: number | null, current: number | null): { timeToEmptySec?: number; timeToFullSec?: number } {
  if (capacityAh === null || capacityAh <= 0 || soc === null || current === null) return {};
  if (Math.abs(current) < capacityAh * IDLE_C_RATE) return {};
  const clamped = Math.min(100, Math.max(0, soc));
  if (current < 0) return { timeToEmptySec: Math.round((((clamped / 100) * capacityAh) / -current) * 3600) };
  return { timeToFullSec: Math.round(((((100 - clamped) / 100) * capacityAh) / current) * 3600) };
}
