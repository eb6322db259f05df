import type { FieldError } from '../../../shared/domain-error.js';
import { InvalidAlertRuleError } from './alerts.errors.js';

export type AlertOp = 'below' | 'above';

/**
 * A threshold on one metric of a device's batteries. `clearAt` is the hysteresis bound the value
 * must cross back over to resolve an open alert; `forSec` is how long the breach must hold before
 * the alert opens. Without `batteryId` the rule covers every battery of the device.
 *
 * The metric `crashes` (CRASH_METRIC) is the device's, not a battery's: the number of crash reports
 * it sent in the last `windowSec` seconds, judged when one arrives and when the window has passed
 * over it. Such a rule takes `windowSec` and no `batteryId`; only it takes `windowSec`.
 */
export interface AlertRule {
  ruleId: string;
  metric: string;
  op: AlertOp;
  threshold: number;
  clearAt: number;
  forSec: number;
  batteryId?: string;
  windowSec?: number;
  enabled: boolean;
}

/** The device-level metric: crash reports in the rule's window (the crash reset reasons only). */
export const CRASH_METRIC = 'crashes';
export const MIN_WINDOW_SEC = 60;
export const MAX_WINDOW_SEC = 86_400;
/** The battery id of a device-level series and its alerts: they belong to no battery. */
export const DEVICE_LEVEL_BATTERY_ID = '';

export const isCrashRule = (rule: Pick<AlertRule, 'metric'>): boolean => rule.metric === CRASH_METRIC;

export const MAX_ALERT_RULES = 50;
export const MAX_FOR_SEC = 86_400;
/** ruleId and metric: 1 to 64 of these characters. */
export const RULE_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
/** The charset of telemetry battery ids, so a rule can name any battery a gateway reports. */
export const RULE_BATTERY_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/** Fleet defaults shipped with the service: they apply to devices without rules of their own. */
export const DEFAULT_ALERT_RULES: readonly Readonly<AlertRule>[] = Object.freeze([
  Object.freeze({ ruleId: 'soc-low', metric: 'soc', op: 'below', threshold: 20, clearAt: 25, forSec: 600, enabled: true } as const),
  Object.freeze({ ruleId: 'temperature-high', metric: 'temperature', op: 'above', threshold: 55, clearAt: 50, forSec: 60, enabled: true } as const),
  Object.freeze({ ruleId: 'temperature-low', metric: 'temperature', op: 'below', threshold: -10, clearAt: -5, forSec: 60, enabled: true } as const),
  // A crash loop: 3 or more crashes within 10 minutes; it resolves after 10 minutes without one.
  Object.freeze({ ruleId: 'crash-loop', metric: CRASH_METRIC, op: 'above', threshold: 2, clearAt: 0, forSec: 0, windowSec: 600, enabled: true } as const),
]);

const isFiniteNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/** The problems of one rule; `seen` holds the ruleIds of the rules before it. */
function problemsOf(rule: AlertRule, index: number, seen: Map<string, number>): FieldError[] {
  const errors: FieldError[] = [];
  const problem = (field: string, message: string) => errors.push({ field: `rules[${index}].${field}`, message: `rule ${index}: ${message}` });

  if (typeof rule.ruleId !== 'string' || !RULE_NAME_PATTERN.test(rule.ruleId)) {
    problem('ruleId', 'ruleId must be 1 to 64 characters of A-Z, a-z, 0-9, _ . -');
  } else if (seen.has(rule.ruleId)) {
    problem('ruleId', `ruleId "${rule.ruleId}" is already used by rule ${seen.get(rule.ruleId)}`);
  }
  if (typeof rule.metric !== 'string' || !RULE_NAME_PATTERN.test(rule.metric)) {
    problem('metric', 'metric must be 1 to 64 characters of A-Z, a-z, 0-9, _ . -');
  }
  const opKnown = rule.op === 'below' || rule.op === 'above';
  if (!opKnown) problem('op', 'op must be "below" or "above"');
  if (!isFiniteNumber(rule.threshold)) problem('threshold', 'threshold must be a finite number');
  if (!isFiniteNumber(rule.clearAt)) problem('clearAt', 'clearAt must be a finite number');
  if (!Number.isInteger(rule.forSec) || rule.forSec < 0 || rule.forSec > MAX_FOR_SEC) {
    problem('forSec', `forSec must be an integer from 0 to ${MAX_FOR_SEC}`);
  }
  if (rule.batteryId !== undefined && (typeof rule.batteryId !== 'string' || !RULE_BATTERY_ID_PATTERN.test(rule.batteryId))) {
    problem('batteryId', 'batteryId, when given, must be 1 to 64 characters of A-Z, a-z, 0-9, . _ : -');
  }
  if (rule.metric === CRASH_METRIC) {
    if (!Number.isInteger(rule.windowSec) || (rule.windowSec as number) < MIN_WINDOW_SEC || (rule.windowSec as number) > MAX_WINDOW_SEC) {
      problem('windowSec', `windowSec must be an integer from ${MIN_WINDOW_SEC} to ${MAX_WINDOW_SEC} for the metric "${CRASH_METRIC}"`);
    }
    if (rule.batteryId !== undefined) problem('batteryId', `the metric "${CRASH_METRIC}" is the device's: it takes no batteryId`);
  } else if (rule.windowSec !== undefined) {
    problem('windowSec', `windowSec is for the metric "${CRASH_METRIC}" only`);
  }
  if (typeof rule.enabled !== 'boolean') problem('enabled', 'enabled must be true or false');
  // Hysteresis points away from the breach: an alert on a low value clears at or above its threshold.
  if (opKnown && isFiniteNumber(rule.threshold) && isFiniteNumber(rule.clearAt)) {
    if (rule.op === 'below' && rule.clearAt < rule.threshold) {
      problem('clearAt', `clearAt (${rule.clearAt}) must be at least threshold (${rule.threshold}) for op "below"`);
    }
    if (rule.op === 'above' && rule.clearAt > rule.threshold) {
      problem('clearAt', `clearAt (${rule.clearAt}) must be at most threshold (${rule.threshold}) for op "above"`);
    }
  }
  return errors;
}

/** Throws InvalidAlertRuleError naming every problem of the set; returns the rules unchanged when they are valid. */
export function validateAlertRules<T extends readonly AlertRule[]>(rules: T): T {
  const errors: FieldError[] = [];
  if (rules.length > MAX_ALERT_RULES) {
    errors.push({ field: 'rules', message: `at most ${MAX_ALERT_RULES} rules, got ${rules.length}` });
  }
  const seen = new Map<string, number>();
  rules.forEach((rule, index) => {
    errors.push(...problemsOf(rule, index, seen));
    if (typeof rule.ruleId === 'string' && !seen.has(rule.ruleId)) seen.set(rule.ruleId, index);
  });
  if (errors.length > 0) throw new InvalidAlertRuleError(errors);
  return rules;
}
