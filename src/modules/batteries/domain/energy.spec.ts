import fc from 'fast-check';
import { counterIncrease, energyPerBucket, gapsOf, MAX_SEGMENT_MS, segmentEnergy, signedArea, type EnergySample, type EnergyTotals } from './energy.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = Date.UTC(2026, 10, 20);

const close = (actual: number, expected: number, digits = 9) => expect(actual).toBeCloseTo(expected, digits);

function total(buckets: Map<number, EnergyTotals>): EnergyTotals {
  const sum = { chargedAh: 0, dischargedAh: 0, chargedWh: 0, dischargedWh: 0, coveredMs: 0 };
  for (const bucket of buckets.values()) {
    sum.chargedAh += bucket.chargedAh;
    sum.dischargedAh += bucket.dischargedAh;
    sum.chargedWh += bucket.chargedWh;
    sum.dischargedWh += bucket.dischargedWh;
    sum.coveredMs += bucket.coveredMs;
  }
  return sum;
}

/** Records of one battery a few minutes apart, some far apart (gaps), with current and voltage. */
const aTrace = fc
  .array(
    fc.record({
      stepMs: fc.oneof(fc.integer({ min: 1_000, max: 10 * MINUTE }), fc.integer({ min: 10 * MINUTE, max: 40 * MINUTE })),
      current: fc.double({ min: -50, max: 50, noNaN: true }),
      voltage: fc.double({ min: 10, max: 15, noNaN: true }),
    }),
    { minLength: 2, maxLength: 60 },
  )
  .map((steps) => {
    let ts = T0 + 7 * MINUTE;
    return steps.map(({ stepMs, current, voltage }) => ({ ts: (ts += stepMs), current, voltage }));
  });

describe('signedArea', () => {
  it('is the trapezoid when the line keeps its sign, and its positive and negative parts otherwise', () => {
    expect(signedArea(2, 4, 3)).toEqual({ positive: 9, negative: 0 });
    expect(signedArea(-2, -4, 3)).toEqual({ positive: 0, negative: 9 });
    // From +2 to -2 over 4: zero half-way, 2 above and 2 below.
    expect(signedArea(2, -2, 4)).toEqual({ positive: 2, negative: 2 });
    expect(signedArea(-1, 3, 4)).toEqual({ positive: 4.5, negative: 0.5 });
  });

  it('positive minus negative is always the signed trapezoid, both parts ≥ 0', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e3, max: 1e3, noNaN: true }), fc.double({ min: -1e3, max: 1e3, noNaN: true }), fc.double({ min: 0.001, max: 10, noNaN: true }), (start, end, duration) => {
        const { positive, negative } = signedArea(start, end, duration);
        expect(positive).toBeGreaterThanOrEqual(0);
        expect(negative).toBeGreaterThanOrEqual(0);
        close(positive - negative, ((start + end) / 2) * duration, 6);
      }),
    );
  });
});

describe('segmentEnergy', () => {
  it('integrates current and power by the trapezoidal rule: 10 A at 12 V for 6 minutes is 1 Ah and 12 Wh in', () => {
    const energy = segmentEnergy({ ts: T0, current: 10, voltage: 12 }, { ts: T0 + 6 * MINUTE, current: 10, voltage: 12 });
    expect(energy).not.toBeNull();
    close(energy!.chargedAh, 1);
    close(energy!.chargedWh, 12);
    expect(energy).toMatchObject({ dischargedAh: 0, dischargedWh: 0, coveredMs: 6 * MINUTE });
  });

  it('splits a segment whose current changes sign into charge and discharge', () => {
    const energy = segmentEnergy({ ts: T0, current: 6, voltage: 12 }, { ts: T0 + 12 * MINUTE, current: -6, voltage: 12 })!;
    // Zero after 6 minutes: 3 A average over 0.1 h each way.
    close(energy.chargedAh, 0.3);
    close(energy.dischargedAh, 0.3);
    close(energy.chargedWh, 3.6);
    close(energy.dischargedWh, 3.6);
  });

  it('counts a segment of exactly 15 minutes and nothing for a longer one (a gap)', () => {
    expect(segmentEnergy({ ts: T0, current: 1 }, { ts: T0 + MAX_SEGMENT_MS, current: 1 })?.chargedAh).toBeCloseTo(0.25, 12);
    expect(segmentEnergy({ ts: T0, current: 1 }, { ts: T0 + MAX_SEGMENT_MS + 1, current: 1 })).toBeNull();
  });

  it('needs current at both ends, or counters at both ends', () => {
    expect(segmentEnergy({ ts: T0, current: 1 }, { ts: T0 + MINUTE, voltage: 12 })).toBeNull();
    expect(segmentEnergy({ ts: T0, current: 1, voltage: 12 }, { ts: T0 + MINUTE, current: 1 })).toMatchObject({ chargedWh: 0 });
  });

  it("takes the gateway's counters over the current, a decrease being a reset, with Wh at the mean voltage", () => {
    const withCurrent = segmentEnergy(
      { ts: T0, current: 100, voltage: 12, chargedAhTotal: 10, dischargedAhTotal: 4 },
      { ts: T0 + 10 * MINUTE, current: 100, voltage: 12, chargedAhTotal: 10.5, dischargedAhTotal: 4.25 },
    )!;
    close(withCurrent.chargedAh, 0.5);
    close(withCurrent.dischargedAh, 0.25);
    // Energy too: the counted Ah at the mean voltage, not voltage × current.
    close(withCurrent.chargedWh, 0.5 * 12);
    close(withCurrent.dischargedWh, 0.25 * 12);
    const countersOnly = segmentEnergy({ ts: T0, voltage: 12, chargedAhTotal: 10, dischargedAhTotal: 4 }, { ts: T0 + 10 * MINUTE, voltage: 13, chargedAhTotal: 1.5, dischargedAhTotal: 4.5 })!;
    close(countersOnly.chargedAh, 1.5);
    close(countersOnly.dischargedAh, 0.5);
    close(countersOnly.chargedWh, 1.5 * 12.5);
    close(countersOnly.dischargedWh, 0.5 * 12.5);
  });

  it('counterIncrease: the difference, or after a reset the new count', () => {
    expect(counterIncrease(5, 7.5)).toBe(2.5);
    expect(counterIncrease(5, 5)).toBe(0);
    expect(counterIncrease(500, 3)).toBe(3);
  });

  it('parts of a segment add up to the whole', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -50, max: 50, noNaN: true }),
        fc.double({ min: -50, max: 50, noNaN: true }),
        fc.double({ min: 10, max: 15, noNaN: true }),
        fc.double({ min: 10, max: 15, noNaN: true }),
        fc.integer({ min: 2, max: MAX_SEGMENT_MS }),
        fc.double({ min: 0.01, max: 0.99, noNaN: true }),
        (currentA, currentB, voltageA, voltageB, durationMs, cut) => {
          const a = { ts: T0, current: currentA, voltage: voltageA };
          const b = { ts: T0 + durationMs, current: currentB, voltage: voltageB };
          const at = T0 + Math.max(1, Math.min(durationMs - 1, Math.round(durationMs * cut)));
          const whole = segmentEnergy(a, b)!;
          const first = segmentEnergy(a, b, T0, at)!;
          const second = segmentEnergy(a, b, at, b.ts)!;
          for (const key of ['chargedAh', 'dischargedAh', 'chargedWh', 'dischargedWh', 'coveredMs'] as const) close(first[key] + second[key], whole[key], 6);
        },
      ),
    );
  });
});

describe('energyPerBucket', () => {
  it('cuts a segment at the bucket edge: 12 A from 00:55 to 01:05 puts 1 Ah in each hour', () => {
    const samples = [
      { ts: T0 + 55 * MINUTE, current: 12 },
      { ts: T0 + 65 * MINUTE, current: 12 },
    ];
    const buckets = energyPerBucket(samples, T0, T0 + 2 * HOUR, HOUR);
    close(buckets.get(T0)!.chargedAh, 1);
    close(buckets.get(T0 + HOUR)!.chargedAh, 1);
    expect(buckets.get(T0)!.coveredMs).toBe(5 * MINUTE);
    expect([...buckets.keys()]).toEqual([T0, T0 + HOUR]);
  });

  it('leaves out what lies outside the range, and counts only the part of a segment inside it', () => {
    const samples = [
      { ts: T0 - 5 * MINUTE, current: 6 },
      { ts: T0 + 5 * MINUTE, current: 6 },
      { ts: T0 + HOUR + 5 * MINUTE, current: 6 },
    ];
    const buckets = energyPerBucket(samples, T0, T0 + HOUR, HOUR);
    close(buckets.get(T0)!.chargedAh, 0.5);
    expect(buckets.get(T0)!.coveredMs).toBe(5 * MINUTE);
  });

  it('gives the same buckets whatever the order the records came in, and repeats of a record change nothing', () => {
    fc.assert(
      fc.property(aTrace, fc.array(fc.nat(), { maxLength: 60 }), (trace, keys) => {
        const shuffled = trace.map((sample, i) => ({ sample, key: keys[i] ?? i })).sort((x, y) => x.key - y.key).map(({ sample }) => sample);
        const from = T0;
        const to = T0 + 48 * HOUR;
        const inOrder = energyPerBucket(trace, from, to, HOUR);
        const outOfOrder = energyPerBucket([...shuffled, ...shuffled.slice(0, 5)], from, to, HOUR);
        expect(outOfOrder).toEqual(inOrder);
      }),
    );
  });

  it('hourly buckets add up to the daily ones and to the whole trace', () => {
    fc.assert(
      fc.property(aTrace, (trace) => {
        const from = T0;
        const to = T0 + 2 * 24 * HOUR;
        const hourly = total(energyPerBucket(trace, from, to, HOUR));
        const daily = total(energyPerBucket(trace, from, to, 24 * HOUR));
        let whole = { chargedAh: 0, dischargedAh: 0, chargedWh: 0, dischargedWh: 0, coveredMs: 0 };
        for (let i = 1; i < trace.length; i += 1) {
          const segment = segmentEnergy(trace[i - 1], trace[i]);
          if (segment) whole = { chargedAh: whole.chargedAh + segment.chargedAh, dischargedAh: whole.dischargedAh + segment.dischargedAh, chargedWh: whole.chargedWh + segment.chargedWh, dischargedWh: whole.dischargedWh + segment.dischargedWh, coveredMs: whole.coveredMs + segment.coveredMs };
        }
        for (const key of ['chargedAh', 'dischargedAh', 'chargedWh', 'dischargedWh', 'coveredMs'] as const) {
          close(hourly[key], whole[key], 6);
          close(daily[key], whole[key], 6);
        }
      }),
    );
  });

  it('a record landing between two stored ones replaces their segment by two', () => {
    const a: EnergySample = { ts: T0 + 10 * MINUTE, current: 10, voltage: 12 };
    const b: EnergySample = { ts: T0 + 20 * MINUTE, current: 10, voltage: 12 };
    const late: EnergySample = { ts: T0 + 15 * MINUTE, current: -10, voltage: 12 };
    const before = energyPerBucket([a, b], T0, T0 + HOUR, HOUR).get(T0)!;
    const after = energyPerBucket([a, b, late], T0, T0 + HOUR, HOUR).get(T0)!;
    close(before.chargedAh, 10 / 6);
    expect(before.dischargedAh).toBe(0);
    // Two segments from +10 to -10 and back: each half charge, half discharge, 2.5 minutes at 5 A average.
    close(after.chargedAh, 2 * 5 * (2.5 / 60));
    close(after.dischargedAh, 2 * 5 * (2.5 / 60));
  });
});

describe('gapsOf', () => {
  it('names the spans between records more than 15 minutes apart, clipped to the range', () => {
    const samples = [{ ts: T0 - 20 * MINUTE }, { ts: T0 + 10 * MINUTE }, { ts: T0 + 20 * MINUTE }, { ts: T0 + 35 * MINUTE }, { ts: T0 + 80 * MINUTE }];
    expect(gapsOf(samples, T0, T0 + HOUR)).toEqual([
      { from: T0, to: T0 + 10 * MINUTE },
      { from: T0 + 35 * MINUTE, to: T0 + HOUR },
    ]);
  });
});
