import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { EventLog } from '../../events/index.js';
import type { TelemetryRecord } from '../../telemetry/index.js';
import type { Alert } from '../domain/alert.js';
import { evaluate, ruleAppliesTo, type SeriesState } from '../domain/alert-evaluator.js';
import type { AlertRule } from '../domain/alert-rule.js';
import type { DeviceAlertWork, StoredSeries } from '../domain/alert.store.js';

const later = (a: Date | null, b: Date | null): Date | null => (a === null ? b : b === null ? a : a > b ? a : b);

/**
 * Applies what happened to a device's series inside its alert transaction (AlertStore.forDevice):
 * stores the series' new state, opens and resolves alerts, and records alert.opened/alert.resolved
 * in the same transaction, so an alert and its event commit together or not at all.
 */
@Injectable()
export class AlertTransitions {
  constructor(private readonly events: EventLog) {}

  /**
   * Evaluates the records ingest stored in one flush. A record at or before `previousNewestTs` (the
   * device's newest record before that flush) came late and moves nothing: see alert-evaluator.ts.
   */
  async evaluate(unit: DeviceAlertWork, deviceId: string, ownerId: string | null, rules: AlertRule[], previousNewestTs: Date | null, records: TelemetryRecord[]): Promise<number> {
    const stored = new Map((await unit.series()).map((series) => [`${series.batteryId}\u0000${series.ruleId}`, series]));
    const batteries = [...new Set(records.map((record) => record.batteryId))];
    let transitions = 0;
    for (const rule of rules) {
      for (const batteryId of batteries) {
        if (!ruleAppliesTo(rule, batteryId)) continue;
        const current = stored.get(`${batteryId}\u0000${rule.ruleId}`);
        if (!rule.enabled && !current) continue;
        const values = records.filter((record) => record.batteryId === batteryId && typeof record.metrics[rule.metric] === 'number').map((record) => ({ ts: record.ts, value: record.metrics[rule.metric] }));
        if (values.length === 0) continue;
        const before: SeriesState = current
          ? { ...current.state, watermark: later(current.state.watermark, previousNewestTs) }
          : { watermark: previousNewestTs, breachingSince: null, open: null };
        const result = evaluate(rule, before, values);
        let openAlertId = current?.openAlertId ?? null;
        for (const transition of result.transitions) {
          transitions += 1;
          if (transition.kind === 'opened') {
            openAlertId = randomUUID();
            await this.open(unit, { alertId: openAlertId, deviceId, batteryId, ruleId: rule.ruleId, metric: rule.metric, op: rule.op, threshold: rule.threshold, clearAt: rule.clearAt, value: transition.value, state: 'open', openedAt: transition.at, acknowledgedAt: null, resolvedAt: null, resolvedValue: null }, ownerId);
          } else if (openAlertId) {
            await this.resolve(unit, openAlertId, transition.at, transition.value, ownerId, 'cleared');
            openAlertId = null;
          }
        }
        await this.store(unit, batteryId, rule.ruleId, current, result.state, openAlertId);
      }
    }
    return transitions;
  }

  /**
   * After a rule change: the series of rules that are gone or disabled end, and their open alerts
   * resolve (without a value, reason `rule_removed`). Series of rules that stay keep their state.
   */
  async retire(unit: DeviceAlertWork, deviceId: string, rules: AlertRule[], now: Date): Promise<void> {
    const enabled = new Set(rules.filter((rule) => rule.enabled).map((rule) => rule.ruleId));
    const ownerId = await unit.ownerId();
    for (const series of await unit.series()) {
      if (enabled.has(series.ruleId)) continue;
      if (series.openAlertId) await this.resolve(unit, series.openAlertId, now, null, ownerId, 'rule_removed');
      await unit.dropSeries(series.batteryId, series.ruleId);
    }
  }

  private async store(unit: DeviceAlertWork, batteryId: string, ruleId: string, current: StoredSeries | undefined, state: SeriesState, openAlertId: string | null): Promise<void> {
    // A quiet series keeps no row; the device's newest record time is its watermark then.
    if (state.breachingSince === null && state.open === null) {
      if (current) await unit.dropSeries(batteryId, ruleId);
    } else {
      await unit.saveSeries(batteryId, ruleId, state, openAlertId);
    }
  }

  private async open(unit: DeviceAlertWork, alert: Alert, ownerId: string | null): Promise<void> {
    await unit.insertAlert(alert);
    await this.events.record(unit.tx, {
      type: 'alert.opened',
      deviceId: alert.deviceId,
      ownerId,
      occurredAt: alert.openedAt,
      data: { alertId: alert.alertId, batteryId: alert.batteryId, ruleId: alert.ruleId, metric: alert.metric, op: alert.op, threshold: alert.threshold, clearAt: alert.clearAt, value: alert.value },
    });
  }

  private async resolve(unit: DeviceAlertWork, alertId: string, at: Date, value: number | null, ownerId: string | null, reason: 'cleared' | 'rule_removed'): Promise<void> {
    const alert = await unit.resolveAlert(alertId, at, value);
    if (!alert) return;
    await this.events.record(unit.tx, {
      type: 'alert.resolved',
      deviceId: alert.deviceId,
      ownerId,
      occurredAt: at,
      data: { alertId, batteryId: alert.batteryId, ruleId: alert.ruleId, metric: alert.metric, value, reason },
    });
  }
}
