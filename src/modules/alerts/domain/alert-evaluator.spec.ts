import fc from 'fast-check';
import { DEFAULT_ALERT_RULES, type AlertRule } from './alert-rule.js';
import { evaluate, INITIAL_SERIES_STATE, ruleAppliesTo, type AlertTransition, type SeriesRecord, type SeriesState } from './alert-evaluator.js';

const T0 = Date.parse('2026-11-21T12:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const rec = (seconds: number, value: number): SeriesRecord => ({ ts: at(seconds), value });
const opened = (seconds: number, value: number): AlertTransition => ({ kind: 'opened', at: at(seconds), value });
const resolved = (seconds: number, value: number): AlertTransition => ({ kind: 'resolved', at: at(seconds), value });

function aRule(overrides: Partial<AlertRule> = {}): AlertRule {
  return { ruleId: 'soc-low', metric: 'soc', op: 'below', threshold: 20, clearAt: 25, forSec: 600, enabled: true, ...overrides };
}

function aState(overrides: Partial<SeriesState> = {}): SeriesState {
  return { ...INITIAL_SERIES_STATE, ...overrides };
}

/** Evaluates the batches one after another, as ingest would; returns every transition and the last state. */
function runBatches(rule: AlertRule, batches: SeriesRecord[][], state: SeriesState = INITIAL_SERIES_STATE) {
  const transitions: AlertTransition[] = [];
  for (const batch of batches) {
    const result = evaluate(rule, state, batch);
    transitions.push(...result.transitions);
    state = result.state;
  }
  return { state, transitions };
}

const socLow = DEFAULT_ALERT_RULES.find((rule) => rule.ruleId === 'soc-low')!;
const temperatureHigh = DEFAULT_ALERT_RULES.find((rule) => rule.ruleId === 'temperature-high')!;
const temperatureLow = DEFAULT_ALERT_RULES.find((rule) => rule.ruleId === 'temperature-low')!;

describe('evaluate: forSec', () => {
  it('opens once, at the first record where the breach has held forSec, with that record’s value', () => {
    const result = evaluate(aRule({ forSec: 600 }), INITIAL_SERIES_STATE, [rec(0, 15), rec(300, 14), rec(599, 13), rec(600, 12), rec(900, 11)]);

    expect(result.transitions).toEqual([opened(600, 12)]);
    expect(result.state).toEqual({ watermark: at(900), breachingSince: at(0), open: { openedAt: at(600), value: 12 } });
  });

  it('does not open when a non-breaching record breaks the breach before forSec; the next breach starts the clock again', () => {
    const result = evaluate(aRule({ forSec: 600 }), INITIAL_SERIES_STATE, [rec(0, 15), rec(500, 15), rec(550, 20), rec(700, 15), rec(1299, 15)]);

    expect(result.transitions).toEqual([]);
    expect(result.state).toEqual({ watermark: at(1299), breachingSince: at(700), open: null });
    expect(evaluate(aRule({ forSec: 600 }), result.state, [rec(1300, 16)]).transitions).toEqual([opened(1300, 16)]);
  });

  it('a value equal to the threshold does not breach', () => {
    expect(evaluate(aRule({ forSec: 0 }), INITIAL_SERIES_STATE, [rec(0, 20)]).transitions).toEqual([]);
    expect(evaluate(aRule({ op: 'above', threshold: 55, clearAt: 50, forSec: 0 }), INITIAL_SERIES_STATE, [rec(0, 55)]).transitions).toEqual([]);
  });

  it('keeps a breach that has not held forSec yet in the state, so the next batch can open it', () => {
    const first = evaluate(aRule({ forSec: 600 }), INITIAL_SERIES_STATE, [rec(0, 15)]);

    expect(first).toEqual({ state: { watermark: at(0), breachingSince: at(0), open: null }, transitions: [] });
    expect(evaluate(aRule({ forSec: 600 }), first.state, [rec(600, 10)]).transitions).toEqual([opened(600, 10)]);
  });

  it('judges the condition from records only: a gap without records does not break a breach', () => {
    expect(evaluate(aRule({ forSec: 600 }), INITIAL_SERIES_STATE, [rec(0, 15), rec(3600, 15)]).transitions).toEqual([opened(3600, 15)]);
  });

  it('forSec 0 opens on the first breaching record', () => {
    const result = evaluate(aRule({ forSec: 0 }), INITIAL_SERIES_STATE, [rec(0, 30), rec(10, 19.5), rec(20, 10)]);

    expect(result.transitions).toEqual([opened(10, 19.5)]);
  });

  it('op above: breaches strictly above the threshold', () => {
    const result = evaluate(temperatureHigh, INITIAL_SERIES_STATE, [rec(0, 56), rec(30, 60), rec(59, 58), rec(60, 57)]);

    expect(result.transitions).toEqual([opened(60, 57)]);
  });
});

describe('evaluate: hysteresis', () => {
  const open = aState({ watermark: at(600), breachingSince: at(0), open: { openedAt: at(600), value: 12 } });

  it('a value between threshold and clearAt neither resolves nor counts as a breach', () => {
    const result = evaluate(aRule(), open, [rec(700, 20), rec(800, 24.99), rec(900, 22)]);

    expect(result.transitions).toEqual([]);
    expect(result.state).toEqual({ watermark: at(900), breachingSince: null, open: { openedAt: at(600), value: 12 } });
  });

  it('resolves once when the value reaches clearAt, and a value back in the band does not reopen', () => {
    const result = evaluate(aRule(), open, [rec(700, 22), rec(800, 25), rec(900, 30), rec(1000, 22), rec(2000, 24)]);

    expect(result.transitions).toEqual([resolved(800, 25)]);
    expect(result.state).toEqual({ watermark: at(2000), breachingSince: null, open: null });
  });

  it('after resolving, a new breach must hold forSec again and opens a new alert', () => {
    const result = evaluate(aRule(), open, [rec(700, 26), rec(800, 19), rec(1399, 19), rec(1400, 18)]);

    expect(result.transitions).toEqual([resolved(700, 26), opened(1400, 18)]);
    expect(result.state.breachingSince).toEqual(at(800));
  });

  it('op above resolves at or below clearAt only', () => {
    const state = aState({ watermark: at(60), breachingSince: at(0), open: { openedAt: at(60), value: 57 } });

    const result = evaluate(temperatureHigh, state, [rec(70, 54), rec(80, 50.01), rec(90, 50), rec(100, 40)]);

    expect(result.transitions).toEqual([resolved(90, 50)]);
  });

  it('clearAt equal to threshold: no band, resolves as soon as the value stops breaching', () => {
    const result = evaluate(aRule({ clearAt: 20, forSec: 0 }), INITIAL_SERIES_STATE, [rec(0, 19), rec(1, 20), rec(2, 19.9), rec(3, 21)]);

    expect(result.transitions).toEqual([opened(0, 19), resolved(1, 20), opened(2, 19.9), resolved(3, 21)]);
  });
});

describe('evaluate: late, out-of-order and duplicate records', () => {
  it('sorts a batch by timestamp before evaluating it', () => {
    const result = evaluate(aRule(), INITIAL_SERIES_STATE, [rec(600, 12), rec(900, 30), rec(0, 15), rec(300, 14)]);

    expect(result.transitions).toEqual([opened(600, 12), resolved(900, 30)]);
    expect(result.state.watermark).toEqual(at(900));
  });

  it('a late record that would resolve an open alert changes nothing', () => {
    const open = aState({ watermark: at(1000), breachingSince: at(0), open: { openedAt: at(600), value: 12 } });

    expect(evaluate(aRule(), open, [rec(999, 80), rec(1000, 80)])).toEqual({ state: open, transitions: [] });
  });

  it('a late record that would open an alert changes nothing', () => {
    const idle = aState({ watermark: at(1000) });

    expect(evaluate(aRule({ forSec: 0 }), idle, [rec(10, 1), rec(1000, 1)])).toEqual({ state: idle, transitions: [] });
  });

  it('a late record that would break a running breach does not, nor does one that would have started it earlier', () => {
    const breaching = aState({ watermark: at(500), breachingSince: at(400) });

    const result = evaluate(aRule(), breaching, [rec(450, 50), rec(0, 10), rec(999, 15), rec(1000, 15)]);

    expect(result.transitions).toEqual([opened(1000, 15)]);
    expect(result.state.breachingSince).toEqual(at(400));
  });

  it('in a batch that mixes late and new records, only the new ones count', () => {
    const open = aState({ watermark: at(1000), breachingSince: at(0), open: { openedAt: at(600), value: 12 } });

    const result = evaluate(aRule(), open, [rec(1100, 10), rec(900, 90), rec(1200, 26)]);

    expect(result.transitions).toEqual([resolved(1200, 26)]);
  });

  it('of records with equal timestamps only the first given counts', () => {
    expect(evaluate(aRule({ forSec: 0 }), INITIAL_SERIES_STATE, [rec(0, 10), rec(0, 30)]).transitions).toEqual([opened(0, 10)]);
    expect(evaluate(aRule({ forSec: 0 }), INITIAL_SERIES_STATE, [rec(0, 30), rec(0, 10)]).transitions).toEqual([]);
    expect(evaluate(aRule({ forSec: 0 }), INITIAL_SERIES_STATE, [rec(5, 30), rec(0, 30), rec(5, 10)]).transitions).toEqual([]);
  });

  it('a record with the watermark’s timestamp in a later batch is a duplicate and is ignored', () => {
    const first = evaluate(aRule({ forSec: 0 }), INITIAL_SERIES_STATE, [rec(0, 30)]);

    expect(evaluate(aRule({ forSec: 0 }), first.state, [rec(0, 10)])).toEqual({ state: first.state, transitions: [] });
  });

  it('ignores non-finite values and invalid timestamps entirely: they neither count nor move the watermark', () => {
    const records = [rec(0, 15), rec(100, Number.NaN), rec(200, Number.POSITIVE_INFINITY), rec(300, Number.NEGATIVE_INFINITY), { ts: new Date(Number.NaN), value: 50 }];

    const result = evaluate(aRule({ forSec: 0, clearAt: 20 }), INITIAL_SERIES_STATE, records);

    expect(result.transitions).toEqual([opened(0, 15)]);
    expect(result.state.watermark).toEqual(at(0));
    expect(evaluate(aRule(), INITIAL_SERIES_STATE, [rec(0, Number.NaN)]).state).toEqual(INITIAL_SERIES_STATE);
  });

  it('a non-finite value does not take the place of a finite one with the same timestamp', () => {
    expect(evaluate(aRule({ forSec: 0 }), INITIAL_SERIES_STATE, [rec(0, Number.NaN), rec(0, 10)]).transitions).toEqual([opened(0, 10)]);
  });
});

describe('evaluate: a disabled rule', () => {
  const disabled = aRule({ enabled: false, forSec: 0 });

  it('yields no transitions, clears breachingSince and advances the watermark', () => {
    const result = evaluate(disabled, aState({ watermark: at(0), breachingSince: at(0) }), [rec(100, 10), rec(200, 5)]);

    expect(result).toEqual({ state: { watermark: at(200), breachingSince: null, open: null }, transitions: [] });
  });

  it('leaves an open alert open, whatever the values', () => {
    const open = aState({ watermark: at(0), breachingSince: at(0), open: { openedAt: at(0), value: 10 } });

    expect(evaluate(disabled, open, [rec(100, 90)])).toEqual({ state: { watermark: at(100), breachingSince: null, open: open.open }, transitions: [] });
  });

  it('records seen while it was disabled do not count once it is enabled again', () => {
    const whileDisabled = evaluate(aRule({ enabled: false }), INITIAL_SERIES_STATE, [rec(0, 10), rec(500, 10)]);

    expect(evaluate(aRule(), whileDisabled.state, [rec(100, 10), rec(700, 10)]).transitions).toEqual([]);
    expect(evaluate(aRule(), whileDisabled.state, [rec(700, 10), rec(1300, 10)]).transitions).toEqual([opened(1300, 10)]);
  });
});

describe('evaluate: inputs', () => {
  it('changes neither the state nor the records it is given', () => {
    const state = aState({ watermark: at(0), breachingSince: at(0) });
    const records = [rec(900, 30), rec(600, 10)];
    const before = { state: structuredClone(state), records: structuredClone(records) };

    evaluate(aRule(), state, records);

    expect({ state, records }).toEqual(before);
  });

  it('no records: the state as it was, no transitions', () => {
    const state = aState({ watermark: at(5), breachingSince: at(1) });

    expect(evaluate(aRule(), state, [])).toEqual({ state, transitions: [] });
  });
});

describe('the default rules on one battery’s day', () => {
  it('soc-low: below 20 for 10 minutes opens, 25 resolves', () => {
    const minute = (m: number, soc: number) => rec(m * 60, soc);
    const result = evaluate(socLow, INITIAL_SERIES_STATE, [minute(0, 21), minute(1, 19), minute(6, 18), minute(10, 17), minute(11, 16), minute(20, 24), minute(30, 25)]);

    expect(result.transitions).toEqual([opened(660, 16), resolved(1800, 25)]);
  });

  it('temperature-low: below -10 for a minute opens, -5 resolves', () => {
    const result = evaluate(temperatureLow, INITIAL_SERIES_STATE, [rec(0, -10), rec(10, -11), rec(70, -12), rec(80, -6), rec(90, -5)]);

    expect(result.transitions).toEqual([opened(70, -12), resolved(90, -5)]);
  });
});

describe('ruleAppliesTo', () => {
  it('a rule without batteryId applies to every battery', () => {
    expect(ruleAppliesTo(aRule(), 'main')).toBe(true);
    expect(ruleAppliesTo(aRule(), 'pack-2')).toBe(true);
  });

  it('a rule with a batteryId applies to that battery only', () => {
    expect(ruleAppliesTo(aRule({ batteryId: 'pack-2' }), 'pack-2')).toBe(true);
    expect(ruleAppliesTo(aRule({ batteryId: 'pack-2' }), 'main')).toBe(false);
    expect(ruleAppliesTo(aRule({ batteryId: 'pack-2' }), 'Pack-2')).toBe(false);
  });

  it('says nothing about enabled', () => {
    expect(ruleAppliesTo(aRule({ enabled: false }), 'main')).toBe(true);
  });
});

describe('evaluate: properties', () => {
  /** Valid rules with thresholds, clearAt and forSec small enough for generated records to cross them often. */
  const aValidRule: fc.Arbitrary<AlertRule> = fc
    .record({ op: fc.constantFrom('below' as const, 'above' as const), threshold: fc.integer({ min: -20, max: 60 }), band: fc.integer({ min: 0, max: 10 }), forSec: fc.integer({ min: 0, max: 60 }) })
    .map(({ op, threshold, band, forSec }) => aRule({ op, threshold, clearAt: op === 'below' ? threshold + band : threshold - band, forSec }));

  /** Few distinct seconds, so duplicates are common; values at and around the bounds, now and then not finite. */
  const aRecordFor = (rule: AlertRule): fc.Arbitrary<SeriesRecord> =>
    fc.record({
      ts: fc.integer({ min: 0, max: 300 }).map(at),
      value: fc.oneof(
        { weight: 8, arbitrary: fc.integer({ min: Math.min(rule.threshold, rule.clearAt) - 5, max: Math.max(rule.threshold, rule.clearAt) + 5 }) },
        { weight: 2, arbitrary: fc.constantFrom(rule.threshold, rule.clearAt) },
        { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY) },
      ),
    });

  /** Any prior state a series can be in after some records: idle, breaching, or with an open alert. */
  const aStartState: fc.Arbitrary<SeriesState> = fc.oneof(
    fc.constant(INITIAL_SERIES_STATE),
    fc.constant(aState({ watermark: at(-1), breachingSince: at(-30) })),
    fc.constant(aState({ watermark: at(-1), breachingSince: null, open: { openedAt: at(-1), value: 0 } })),
  );

  /** Independent model: first of each timestamp, in timestamp order, through an explicit idle/breaching/open machine. */
  function model(rule: AlertRule, start: SeriesState, records: SeriesRecord[]): AlertTransition[] {
    const firstOfTs = new Map<number, number>();
    for (const { ts, value } of records) {
      if (Number.isFinite(value) && ts.getTime() > (start.watermark?.getTime() ?? -Infinity) && !firstOfTs.has(ts.getTime())) firstOfTs.set(ts.getTime(), value);
    }
    const below = rule.op === 'below';
    let phase: 'idle' | 'open' = start.open ? 'open' : 'idle';
    let since = start.breachingSince?.getTime() ?? null;
    const out: AlertTransition[] = [];
    for (const ms of [...firstOfTs.keys()].sort((a, b) => a - b)) {
      const value = firstOfTs.get(ms)!;
      const breach = below ? value < rule.threshold : value > rule.threshold;
      since = breach ? (since ?? ms) : null;
      if (phase === 'idle' && since !== null && ms - since >= rule.forSec * 1000) {
        phase = 'open';
        out.push({ kind: 'opened', at: new Date(ms), value });
      } else if (phase === 'open' && (below ? value >= rule.clearAt : value <= rule.clearAt)) {
        phase = 'idle';
        since = null;
        out.push({ kind: 'resolved', at: new Date(ms), value });
      }
    }
    return out;
  }

  const aCase = fc.tuple(aValidRule, aStartState).chain(([rule, start]) =>
    fc.record({
      rule: fc.constant(rule),
      start: fc.constant(start),
      records: fc.array(aRecordFor(rule), { maxLength: 60 }),
      cuts: fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 8 }),
      shuffleKeys: fc.array(fc.integer(), { minLength: 60, maxLength: 60 }),
    }),
  );

  /** Splits `records` at the cut indexes into consecutive batches. */
  function split<T>(records: T[], cuts: number[]): T[][] {
    const bounds = [0, ...[...new Set(cuts)].filter((cut) => cut < records.length).sort((a, b) => a - b), records.length];
    return bounds.slice(1).map((end, i) => records.slice(bounds[i], end));
  }

  it('one batch gives the transitions of the independent model', () => {
    fc.assert(
      fc.property(aCase, ({ rule, start, records }) => {
        expect(evaluate(rule, start, records).transitions).toEqual(model(rule, start, records));
      }),
    );
  });

  it('records in timestamp order give the same transitions and state in one batch or split into many (each batch in any order)', () => {
    fc.assert(
      fc.property(aCase, ({ rule, start, records, cuts, shuffleKeys }) => {
        const sorted = [...records].sort((a, b) => a.ts.getTime() - b.ts.getTime());
        const batches = split(sorted, cuts).map((batch, b) =>
          batch
            .map((record, i) => ({ record, key: shuffleKeys[(b * 7 + i) % shuffleKeys.length] }))
            .sort((x, y) => x.key - y.key)
            .map(({ record }) => record),
        );

        expect(runBatches(rule, batches, start)).toEqual(evaluate(rule, start, batches.flat()));
      }),
    );
  });

  it('batches in any order: a record no newer than an earlier batch’s newest is ignored; the rest behave as one batch', () => {
    fc.assert(
      fc.property(aCase, ({ rule, start, records, cuts }) => {
        const batches = split(records, cuts);
        let newest = start.watermark?.getTime() ?? -Infinity;
        const counted = batches.flatMap((batch) => {
          const kept = batch.filter((record) => record.ts.getTime() > newest);
          newest = Math.max(newest, ...batch.filter((record) => Number.isFinite(record.value)).map((record) => record.ts.getTime()));
          return kept;
        });

        expect(runBatches(rule, batches, start)).toEqual(evaluate(rule, start, counted));
      }),
    );
  });

  it('across any batches, transitions alternate opened/resolved in time order and the state agrees with the last one', () => {
    fc.assert(
      fc.property(aCase, ({ rule, start, records, cuts }) => {
        const { state, transitions } = runBatches(rule, split(records, cuts), start);

        let expected: AlertTransition['kind'] = start.open ? 'resolved' : 'opened';
        for (const [i, transition] of transitions.entries()) {
          expect(transition.kind).toBe(expected);
          expected = expected === 'opened' ? 'resolved' : 'opened';
          if (i > 0) expect(transition.at.getTime()).toBeGreaterThan(transitions[i - 1].at.getTime());
          const below = rule.op === 'below';
          if (transition.kind === 'opened') expect(below ? transition.value < rule.threshold : transition.value > rule.threshold).toBe(true);
          else expect(below ? transition.value >= rule.clearAt : transition.value <= rule.clearAt).toBe(true);
        }
        const last = transitions.at(-1);
        expect(state.open !== null).toBe(last ? last.kind === 'opened' : start.open !== null);
        if (last?.kind === 'opened') expect(state.open).toEqual({ openedAt: last.at, value: last.value });
      }),
    );
  });

  it('records at or before the watermark never change the state', () => {
    fc.assert(
      fc.property(aCase, ({ rule, start, records }) => {
        const { state } = evaluate(rule, start, records);
        const late = records.filter((record) => state.watermark !== null && record.ts.getTime() <= state.watermark.getTime());

        expect(evaluate(rule, state, late)).toEqual({ state, transitions: [] });
      }),
    );
  });
});
