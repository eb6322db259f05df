import { DomainError } from '../../../shared/domain-error.js';
import { DEFAULT_ALERT_RULES, isCrashRule, MAX_ALERT_RULES, validateAlertRules, type AlertRule } from './alert-rule.js';

function aRule(overrides: Partial<AlertRule> = {}): AlertRule {
  return { ruleId: 'soc-low', metric: 'soc', op: 'below', threshold: 20, clearAt: 25, forSec: 600, enabled: true, ...overrides };
}

const rulesNamed = (count: number) => Array.from({ length: count }, (_, i) => aRule({ ruleId: `rule-${i}` }));

/** The refusal `run` throws; fails the test unless it is an INVALID_ALERT_RULE DomainError. */
function refusal(run: () => unknown): DomainError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('INVALID_ALERT_RULE');
    expect((error as DomainError).kind).toBe('invalid');
    return error as DomainError;
  }
  throw new Error('expected INVALID_ALERT_RULE, nothing was thrown');
}

const fieldsOf = (error: DomainError) => (error.details.errors ?? []).map((problem) => problem.field);

describe('DEFAULT_ALERT_RULES', () => {
  it('are the shipped fleet defaults, every battery, all enabled, and a crash loop: 3 crashes in 10 minutes', () => {
    expect(DEFAULT_ALERT_RULES).toEqual([
      { ruleId: 'soc-low', metric: 'soc', op: 'below', threshold: 20, clearAt: 25, forSec: 600, enabled: true },
      { ruleId: 'temperature-high', metric: 'temperature', op: 'above', threshold: 55, clearAt: 50, forSec: 60, enabled: true },
      { ruleId: 'temperature-low', metric: 'temperature', op: 'below', threshold: -10, clearAt: -5, forSec: 60, enabled: true },
      { ruleId: 'crash-loop', metric: 'crashes', op: 'above', threshold: 2, clearAt: 0, forSec: 0, windowSec: 600, enabled: true },
    ]);
    expect(DEFAULT_ALERT_RULES.filter(isCrashRule).map((rule) => rule.ruleId)).toEqual(['crash-loop']);
    expect(DEFAULT_ALERT_RULES.every((rule) => !('batteryId' in rule))).toBe(true);
  });

  it('are valid', () => {
    expect(validateAlertRules(DEFAULT_ALERT_RULES)).toBe(DEFAULT_ALERT_RULES);
  });

  it('cannot be changed in place', () => {
    expect(Object.isFrozen(DEFAULT_ALERT_RULES)).toBe(true);
    expect(DEFAULT_ALERT_RULES.every((rule) => Object.isFrozen(rule))).toBe(true);
  });
});

describe('validateAlertRules', () => {
  it.each([
    ['no rules', []],
    ['a ruleId and a metric of 64 characters of the whole charset', [aRule({ ruleId: 'Az09_.-'.padEnd(64, 'x'), metric: 'soc.Cell_1-'.padEnd(64, 'y') })]],
    ['forSec 0 and forSec 86400', [aRule({ ruleId: 'a', forSec: 0 }), aRule({ ruleId: 'b', forSec: 86_400 })]],
    ['clearAt equal to threshold (no hysteresis), both ops', [aRule({ ruleId: 'a', op: 'below', clearAt: 20 }), aRule({ ruleId: 'b', op: 'above', threshold: 55, clearAt: 55 })]],
    ['negative and fractional thresholds', [aRule({ op: 'above', threshold: -0.5, clearAt: -12.25 })]],
    ['a rule for one battery', [aRule({ batteryId: 'pack-1:cell.2' })]],
    ['a disabled rule', [aRule({ enabled: false })]],
    [`${MAX_ALERT_RULES} rules`, rulesNamed(MAX_ALERT_RULES)],
  ] as Array<[string, AlertRule[]]>)('accepts %s', (_name, rules) => {
    expect(validateAlertRules(rules)).toBe(rules);
  });

  it.each([
    ['an empty ruleId', { ruleId: '' }, 'ruleId'],
    ['a ruleId of 65 characters', { ruleId: 'x'.repeat(65) }, 'ruleId'],
    ['a ruleId with a space', { ruleId: 'soc low' }, 'ruleId'],
    ['a ruleId with a slash', { ruleId: 'soc/low' }, 'ruleId'],
    ['a ruleId with a non-ASCII letter', { ruleId: 'socé' }, 'ruleId'],
    ['an empty metric', { metric: '' }, 'metric'],
    ['a metric of 65 characters', { metric: 'm'.repeat(65) }, 'metric'],
    ['a metric with a colon', { metric: 'cell:1' }, 'metric'],
    ['an unknown op', { op: 'equals' as AlertRule['op'] }, 'op'],
    ['a NaN threshold', { threshold: Number.NaN }, 'threshold'],
    ['an infinite threshold', { threshold: Number.POSITIVE_INFINITY, clearAt: Number.POSITIVE_INFINITY }, 'threshold'],
    ['a NaN clearAt', { clearAt: Number.NaN }, 'clearAt'],
    ['an infinite clearAt', { clearAt: Number.POSITIVE_INFINITY }, 'clearAt'],
    ['a negative forSec', { forSec: -1 }, 'forSec'],
    ['a fractional forSec', { forSec: 1.5 }, 'forSec'],
    ['a forSec above a day', { forSec: 86_401 }, 'forSec'],
    ['a NaN forSec', { forSec: Number.NaN }, 'forSec'],
    ['op below with clearAt under threshold', { op: 'below', threshold: 20, clearAt: 19.99 }, 'clearAt'],
    ['op above with clearAt over threshold', { op: 'above', threshold: 55, clearAt: 55.01 }, 'clearAt'],
    ['an empty batteryId', { batteryId: '' }, 'batteryId'],
  ] as Array<[string, Partial<AlertRule>, string]>)('refuses %s, naming the rule and the field', (_name, overrides, field) => {
    const error = refusal(() => validateAlertRules([aRule({ ruleId: 'first' }), aRule(overrides)]));

    expect(fieldsOf(error)).toContain(`rules[1].${field}`);
    expect(fieldsOf(error).every((name) => name.startsWith('rules[1].'))).toBe(true);
    expect(error.message).toMatch(/^rule 1: /);
    expect(error.message).toContain(field);
  });

  it('refuses a duplicate ruleId, naming both rules', () => {
    const error = refusal(() => validateAlertRules([aRule({ ruleId: 'a' }), aRule({ ruleId: 'b' }), aRule({ ruleId: 'a' })]));

    expect(fieldsOf(error)).toEqual(['rules[2].ruleId']);
    expect(error.message).toBe('rule 2: ruleId "a" is already used by rule 0');
  });

  it('says which way the hysteresis must point', () => {
    expect(refusal(() => validateAlertRules([aRule({ op: 'below', threshold: 20, clearAt: 15 })])).message).toBe(
      'rule 0: clearAt (15) must be at least threshold (20) for op "below"',
    );
    expect(refusal(() => validateAlertRules([aRule({ op: 'above', threshold: 55, clearAt: 60 })])).message).toBe(
      'rule 0: clearAt (60) must be at most threshold (55) for op "above"',
    );
  });

  it(`refuses more than ${MAX_ALERT_RULES} rules`, () => {
    const error = refusal(() => validateAlertRules(rulesNamed(MAX_ALERT_RULES + 1)));

    expect(fieldsOf(error)).toEqual(['rules']);
    expect(error.message).toBe(`at most ${MAX_ALERT_RULES} rules, got ${MAX_ALERT_RULES + 1}`);
  });

  it('names every problem of every rule at once', () => {
    const error = refusal(() => validateAlertRules([aRule({ forSec: -1 }), aRule({ ruleId: 'ok' }), aRule({ ruleId: 'bad id', metric: '', threshold: Number.NaN })]));

    expect(fieldsOf(error)).toEqual(['rules[0].forSec', 'rules[2].ruleId', 'rules[2].metric', 'rules[2].threshold']);
  });

  it('takes windowSec for the metric "crashes" only, and requires it there, with no batteryId', () => {
    const crashLoop = aRule({ ruleId: 'loop', metric: 'crashes', op: 'above', threshold: 2, clearAt: 0, forSec: 0, windowSec: 600 });
    expect(validateAlertRules([crashLoop])).toEqual([crashLoop]);

    const { windowSec: _, ...withoutWindow } = crashLoop;
    expect(refusal(() => validateAlertRules([withoutWindow])).message).toBe('rule 0: windowSec must be an integer from 60 to 86400 for the metric "crashes"');
    expect(fieldsOf(refusal(() => validateAlertRules([{ ...crashLoop, windowSec: 59 }])))).toEqual(['rules[0].windowSec']);
    expect(fieldsOf(refusal(() => validateAlertRules([{ ...crashLoop, windowSec: 86_401 }])))).toEqual(['rules[0].windowSec']);
    expect(fieldsOf(refusal(() => validateAlertRules([{ ...crashLoop, windowSec: 600.5 }])))).toEqual(['rules[0].windowSec']);
    expect(refusal(() => validateAlertRules([{ ...crashLoop, batteryId: 'main' }])).message).toBe('rule 0: the metric "crashes" is the device\'s: it takes no batteryId');
    expect(refusal(() => validateAlertRules([aRule({ windowSec: 600 })])).message).toBe('rule 0: windowSec is for the metric "crashes" only');
  });
});
