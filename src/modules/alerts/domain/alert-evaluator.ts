import type { AlertRule } from './alert-rule.js';

/**
 * Alert evaluation for one series: one device, one battery, one rule. A pure state machine: the
 * caller loads the series state, passes the rule and the records ingest inserted for the rule's
 * metric and that battery, then stores the returned state and reports the transitions, in one
 * transaction.
 *
 * Semantics:
 * - Only records newer than the watermark move the state. A record at or before the watermark
 *   (late, or out of order across batches) is ignored: ingest stores it, but it never opens or
 *   resolves an alert, so a gateway replaying or backfilling old data cannot make an alert flap.
 * - Within one call the records are taken in timestamp order; of records with equal timestamps
 *   only the first (in the order given) counts. Records whose value is not a finite number, or
 *   whose ts is not a valid date, are ignored entirely (they neither count nor move the watermark).
 * - A record breaches when its value is strictly below (`op: below`) or strictly above (`op: above`)
 *   the threshold. `breachingSince` is the ts of the first record of the current unbroken run of
 *   breaching records; any non-breaching record ends the run. Only records judge the condition:
 *   a gap without records does not break a run.
 * - An alert opens once, at the first record where the run has lasted at least `forSec`
 *   (record ts − breachingSince ≥ forSec); with `forSec` 0 the first breaching record opens it. The
 *   opening carries that record's ts and value. While it is open, further breaches change nothing.
 * - An open alert resolves once, at the first record whose value crosses `clearAt`: ≥ clearAt for
 *   `below`, ≤ clearAt for `above`. A value between threshold and clearAt (the hysteresis band)
 *   neither resolves an open alert nor counts as a breach. After resolving, a later breach must
 *   hold `forSec` again and opens a new alert.
 * - Transitions therefore alternate opened, resolved, opened, … for a series, whatever the split
 *   of the records into batches: records sent in timestamp order give the same transitions in one
 *   call or in many.
 * - A disabled rule yields no transitions, clears `breachingSince` and still advances the watermark
 *   (records seen while disabled never count later). An alert open when the rule was disabled stays
 *   open; closing it is the caller's decision. Editing a rule keeps the state as it is: an open
 *   alert then resolves by the new clearAt, a running breach is judged by the new threshold.
 */
export interface SeriesState {
  /** Ts of the newest record evaluated; records at or before it are ignored. */
  watermark: Date | null;
  /** Ts of the first record of the current unbroken breach. */
  breachingSince: Date | null;
  open: { openedAt: Date; value: number } | null;
}

export interface SeriesRecord {
  ts: Date;
  value: number;
}

export type AlertTransition = { kind: 'opened'; at: Date; value: number } | { kind: 'resolved'; at: Date; value: number };

export const INITIAL_SERIES_STATE: SeriesState = Object.freeze({ watermark: null, breachingSince: null, open: null });

type RuleCondition = Pick<AlertRule, 'op' | 'threshold' | 'clearAt' | 'forSec' | 'enabled'>;

/** Whether the rule covers this battery: a rule without batteryId covers them all. Says nothing about `enabled`. */
export function ruleAppliesTo(rule: Pick<AlertRule, 'batteryId'>, batteryId: string): boolean {
  return rule.batteryId === undefined || rule.batteryId === batteryId;
}

/** The value is on the alerting side of the threshold; equal to it is not a breach. */
export function breaches(rule: Pick<AlertRule, 'op' | 'threshold'>, value: number): boolean {
  return rule.op === 'below' ? value < rule.threshold : value > rule.threshold;
}

/** The value has crossed back over clearAt (equal counts): an open alert resolves. */
export function clears(rule: Pick<AlertRule, 'op' | 'clearAt'>, value: number): boolean {
  return rule.op === 'below' ? value >= rule.clearAt : value <= rule.clearAt;
}

/** The records that count, in timestamp order: valid, newer than the watermark, first of each timestamp. */
function countedRecords(records: readonly SeriesRecord[], watermark: Date | null): SeriesRecord[] {
  const after = watermark?.getTime() ?? -Infinity;
  // Array.prototype.sort is stable, so the first of equal timestamps stays first.
  const newer = records.filter((record) => Number.isFinite(record.value) && record.ts.getTime() > after).sort((a, b) => a.ts.getTime() - b.ts.getTime());
  return newer.filter((record, i) => i === 0 || record.ts.getTime() !== newer[i - 1].ts.getTime());
}

export function evaluate(rule: RuleCondition, state: SeriesState, records: readonly SeriesRecord[]): { state: SeriesState; transitions: AlertTransition[] } {
  const counted = countedRecords(records, state.watermark);
  const watermark = counted.length > 0 ? counted[counted.length - 1].ts : state.watermark;

  if (!rule.enabled) return { state: { watermark, breachingSince: null, open: state.open }, transitions: [] };

  const transitions: AlertTransition[] = [];
  let { breachingSince, open } = state;
  for (const { ts, value } of counted) {
    if (breaches(rule, value)) breachingSince ??= ts;
    else breachingSince = null;

    if (open === null) {
      if (breachingSince !== null && ts.getTime() - breachingSince.getTime() >= rule.forSec * 1000) {
        open = { openedAt: ts, value };
        transitions.push({ kind: 'opened', at: ts, value });
      }
    } else if (clears(rule, value)) {
      // A valid rule's clearing value never breaches, so breachingSince is already null here.
      open = null;
      transitions.push({ kind: 'resolved', at: ts, value });
    }
  }
  return { state: { watermark, breachingSince, open }, transitions };
}
