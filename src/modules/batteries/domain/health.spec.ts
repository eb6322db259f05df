import { dischargeDepths, healthOf, histogramOf, timeBeyond } from './health.js';
import { averageCurrent, timeToEmptyOrFull } from './time-to-empty.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 20);

describe('dischargeDepths', () => {
  it('measures each fall from a local maximum to the next minimum', () => {
    expect(dischargeDepths([50, 80, 95, 60, 30, 55, 90, 70, 72])).toEqual([65, 20]);
  });

  it('ignores wiggles smaller than the hysteresis, and a fall still under way', () => {
    expect(dischargeDepths([80, 79.5, 80, 79.6, 80])).toEqual([]);
    expect(dischargeDepths([100, 90, 80, 70])).toEqual([]);
    expect(dischargeDepths([100, 40, 41])).toEqual([60]);
  });

  it('is empty for no or one value', () => {
    expect(dischargeDepths([])).toEqual([]);
    expect(dischargeDepths([50])).toEqual([]);
  });
});

describe('histogramOf', () => {
  it('bins depths by 10 %, 100 % in the last bin', () => {
    expect(histogramOf([0, 9.99, 10, 65, 100, 95])).toEqual([2, 1, 0, 0, 0, 0, 1, 0, 0, 2]);
  });
});

describe('timeBeyond', () => {
  const at = (minutes: number, value: number) => ({ ts: T0 + minutes * MINUTE, value });

  it('counts whole segments beyond the threshold and the part of a crossing one', () => {
    // 88 → 92 over 4 minutes crosses 90 half-way: 2 minutes above, then 10 minutes above.
    expect(timeBeyond([at(0, 88), at(4, 92), at(14, 95)], 90, true)).toBe(12 * MINUTE);
    expect(timeBeyond([at(0, 25), at(10, 15)], 20, false)).toBe(5 * MINUTE);
  });

  it('counts nothing over a gap, nor a segment exactly at the threshold', () => {
    expect(timeBeyond([at(0, 95), at(16, 95)], 90, true)).toBe(0);
    expect(timeBeyond([at(0, 90), at(10, 90)], 90, true)).toBe(0);
  });
});

describe('healthOf', () => {
  it('takes the extremes, the imbalance and the last soh of each day, whatever the order of the records', () => {
    const records = [
      { ts: T0 + 10 * MINUTE, soc: 40, temperature: 30, cellVoltageMin: 3.3, cellVoltageMax: 3.35, soh: 98 },
      { ts: T0, soc: 60, temperature: 47, soh: 99 },
      { ts: T0 + 86_400_000 + MINUTE, soc: 55, cellVoltageMin: 3.2, cellVoltageMax: 3.4, soh: 97.5 },
      { ts: T0 + 5 * MINUTE, soc: 50, temperature: 44 },
    ];
    const health = healthOf(records);
    expect(health.minSoc).toBe(40);
    expect(health.maxTemperature).toBe(47);
    expect(health.maxCellImbalanceV).toBeCloseTo(0.2, 12);
    expect(health.soh).toEqual([
      { ts: T0 + 10 * MINUTE, value: 98 },
      { ts: T0 + 86_400_000 + MINUTE, value: 97.5 },
    ]);
    // 47 → 44 over 5 minutes: above 45 for the first 2/3.
    expect(health.timeAboveTemperature45Sec).toBeCloseTo(200, 9);
    expect(healthOf([...records].reverse())).toEqual(health);
  });

  it('answers nulls and zeros for records without the metrics', () => {
    expect(healthOf([{ ts: T0 }])).toEqual({
      depthOfDischargeHistogram: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      timeAboveSoc90Sec: 0,
      timeBelowSoc20Sec: 0,
      timeAboveTemperature45Sec: 0,
      minSoc: null,
      maxTemperature: null,
      maxCellImbalanceV: null,
      soh: [],
    });
  });
});

describe('time to empty or full', () => {
  it('averages the current over the last 15 minutes, time-weighted', () => {
    const records = [
      { ts: T0, current: -100 },
      { ts: T0 + 10 * MINUTE, current: -10 },
      { ts: T0 + 20 * MINUTE, current: -10 },
      { ts: T0 + 25 * MINUTE, current: -20 },
    ];
    // Window 10–25: 10 minutes at -10, 5 minutes averaging -15.
    expect(averageCurrent(records)).toBeCloseTo((-10 * 10 + -15 * 5) / 15, 12);
    expect(averageCurrent([{ ts: T0, current: 3 }])).toBe(3);
    expect(averageCurrent([{ ts: T0 }])).toBeNull();
  });

  it('divides the charge left (or missing) by the current', () => {
    // 100 Ah at 50 %: 50 Ah at 10 A is 5 hours either way.
    expect(timeToEmptyOrFull(100, 50, -10)).toEqual({ timeToEmptySec: 5 * 3600 });
    expect(timeToEmptyOrFull(100, 50, 10)).toEqual({ timeToFullSec: 5 * 3600 });
  });

  it('gives nothing without capacity, SoC or current, or for an idle battery', () => {
    expect(timeToEmptyOrFull(null, 50, -10)).toEqual({});
    expect(timeToEmptyOrFull(100, null, -10)).toEqual({});
    expect(timeToEmptyOrFull(100, 50, null)).toEqual({});
    expect(timeToEmptyOrFull(100, 50, -0.05)).toEqual({});
  });
});
