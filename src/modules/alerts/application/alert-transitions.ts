import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { EventLog } from '../../events/index.js';
import type { TelemetryRecord } from '../../telemetry/index.js';
import type { Alert } from '../domain/alert.js';
import { breaches, evaluate, ruleAppliesTo, type SeriesRecord, type SeriesState } from '../domain/alert-evaluator.js';
import { DEVICE_LEVEL_BATTERY_ID, isCrashRule, type AlertRule } from '../domain/alert-rule.js';
import type { AlertWork, SeriesKey, StoredSeries } from '../domain/alert.store.js';

const later = (a: Date | null, b: Date | null): Date | null => (a === null ? b : b === null ? a : a > b ? a : b);
const keyOf = (series: SeriesKey) => `${series.deviceId}\u0000${series.batteryId}\u0000${series.ruleId}`;

interface SeriesChanges {
  saves: StoredSeries[];
  drops: SeriesKey[];
  transitions: number;
}

/** What one device's evaluation works on: its rules and the records that count. */
export interface DeviceRecords {
  deviceId: string;
  ownerId: string | null;
  rules: AlertRule[];
  /** Per battery, the newest record time before these records: older ones came late (alert-evaluator.ts). */
  previousNewestTs: Map<string, Date>;
  records: TelemetryRecord[];
}

/**
 * Applies what happened to devices' series inside their alert transaction (AlertStore.forDevices):
 * stores the series' new state, opens and resolves alerts, and records alert.opened/alert.resolved
 * in the same transaction, so an alert and its event commit together or not at all. Series states
 * are written in two statements for the whole unit, whatever the number of devices.
 */
@Injectable()
export class AlertTransitions {
  constructor(private readonly events: EventLog) {}

  /** Evaluates the records ingest stored for these devices; answers the number of transitions. */
  async evaluate(unit: AlertWork, devices: DeviceRecords[]): Promise<number> {
    const stored = new Map((await unit.series()).map((series) => [keyOf(series), series]));
    const changes: SeriesChanges = { saves: [], drops: [], transitions: 0 };
    for (const device of devices) {
      const byBattery = new Map<string, TelemetryRecord[]>();
      for (const record of device.records) {
        const records = byBattery.get(record.batteryId);
        if (records) records.push(record);
        else byBattery.set(record.batteryId, [record]);
      }
      for (const rule of device.rules) {
        if (isCrashRule(rule)) continue; // judged on crash reports (CrashLoopWatch), not on telemetry
        for (const [batteryId, records] of byBattery) {
          if (!ruleAppliesTo(rule, batteryId)) continue;
          const key = { deviceId: device.deviceId, batteryId, ruleId: rule.ruleId };
          const current = stored.get(keyOf(key));
          // A series with no row and no breaching record stays quiet whatever the records: nothing to do.
          if (!current && !(rule.enabled && records.some((record) => typeof record.metrics[rule.metric] === 'number' && breaches(rule, record.metrics[rule.metric])))) continue;
          const values = records.filter((record) => typeof record.metrics[rule.metric] === 'number').map((record) => ({ ts: record.ts, value: record.metrics[rule.metric] }));
          if (values.length === 0) continue;
          await this.step(unit, changes, { key, rule, current, heard: device.previousNewestTs.get(batteryId) ?? null, values, ownerId: device.ownerId });
        }
      }
    }
    await unit.saveSeries(changes.saves);
    await unit.dropSeries(changes.drops);
    return changes.transitions;
  }

  /**
   * Evaluates device-level values (a rule on the metric \`crashes\`: a count judged at \`value.ts\`)
   * for one device; answers the number of transitions.
   */
  async evaluateDeviceValues(unit: AlertWork, deviceId: string, judged: Array<{ rule: AlertRule; value: SeriesRecord }>): Promise<number> {
    const stored = new Map((await unit.series()).map((series) => [keyOf(series), series]));
    const changes: SeriesChanges = { saves: [], drops: [], transitions: 0 };
    const ownerId = judged.length > 0 ? await unit.ownerOf(deviceId) : null;
    for (const { rule, value } of judged) {
      const key = { deviceId, batteryId: DEVICE_LEVEL_BATTERY_ID, ruleId: rule.ruleId };
      const current = stored.get(keyOf(key));
      if (!current && !(rule.enabled && breaches(rule, value.value))) continue;
      await this.step(unit, changes, { key, rule, current, heard: null, values: [value], ownerId });
    }
    await unit.saveSeries(changes.saves);
    await unit.dropSeries(changes.drops);
    return changes.transitions;
  }

  /** One series moved by its new values: alerts opened and resolved now, its new state to save or drop. */
  private async step(unit: AlertWork, changes: SeriesChanges, series: { key: SeriesKey; rule: AlertRule; current: StoredSeries | undefined; heard: Date | null; values: SeriesRecord[]; ownerId: string | null }): Promise<void> {
    const { key, rule, current, heard, values, ownerId } = series;
    const before: SeriesState = current ? { ...current.state, watermark: later(current.state.watermark, heard) } : { watermark: heard, breachingSince: null, open: null };
    const result = evaluate(rule, before, values);
    let openAlertId = current?.openAlertId ?? null;
    for (const transition of result.transitions) {
      changes.transitions += 1;
      if (transition.kind === 'opened') {
        openAlertId = randomUUID();
        await this.open(unit, { alertId: openAlertId, ...key, metric: rule.metric, op: rule.op, threshold: rule.threshold, clearAt: rule.clearAt, value: transition.value, state: 'open', openedAt: transition.at, acknowledgedAt: null, resolvedAt: null, resolvedValue: null }, ownerId);
      } else if (openAlertId) {
        await this.resolve(unit, openAlertId, transition.at, transition.value, ownerId, 'cleared');
        openAlertId = null;
      }
    }
    // A quiet series keeps no row; the device's newest record time is its watermark then.
    if (result.state.breachingSince === null && result.state.open === null) {
      if (current) changes.drops.push(key);
    } else {
      changes.saves.push({ ...key, state: result.state, openAlertId });
    }
  }

  /**
   * After a rule change: the series of rules that are gone or disabled end, and their open alerts
   * resolve (without a value, reason `rule_removed`). Series of rules that stay keep their state.
   */
  async retire(unit: AlertWork, deviceId: string, rules: AlertRule[], now: Date): Promise<void> {
    const enabled = new Set(rules.filter((rule) => rule.enabled).map((rule) => rule.ruleId));
    const retired = (await unit.series()).filter((series) => series.deviceId === deviceId && !enabled.has(series.ruleId));
    if (retired.length === 0) return;
    const ownerId = await unit.ownerOf(deviceId);
    for (const series of retired) {
      if (series.openAlertId) await this.resolve(unit, series.openAlertId, now, null, ownerId, 'rule_removed');
    }
    await unit.dropSeries(retired);
  }

  private async open(unit: AlertWork, alert: Alert, ownerId: string | null): Promise<void> {
    await unit.insertAlert(alert);
    await this.events.record(unit.tx, {
      type: 'alert.opened',
      deviceId: alert.deviceId,
      ownerId,
      occurredAt: alert.openedAt,
      data: { alertId: alert.alertId, batteryId: alert.batteryId, ruleId: alert.ruleId, metric: alert.metric, op: alert.op, threshold: alert.threshold, clearAt: alert.clearAt, value: alert.value },
    });
  }

  private async resolve(unit: AlertWork, alertId: string, at: Date, value: number | null, ownerId: string | null, reason: 'cleared' | 'rule_removed'): Promise<void> {
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
