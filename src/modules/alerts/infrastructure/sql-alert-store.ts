import { Injectable } from '@nestjs/common';
import { DeviceDirectory } from '../../devices/index.js';
import { VISIBLE_DEVICES } from '../../sharing/sql-api.js';
import { DEVICE_LOCK_CLASSES } from '../../../shared/database/advisory-locks.js';
import { Sql } from '../../../shared/database/sql.js';
import { ReplicaSql } from '../../../shared/database/replica-sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { Alert, AlertState } from '../domain/alert.js';
import type { AlertOp, AlertRule } from '../domain/alert-rule.js';
import { AlertStore, type AlertsPage, type AlertsViewer, type AlertWork, type SeriesKey, type StoredSeries, type UnresolvedAlerts } from '../domain/alert.store.js';

interface AlertRow {
  alert_id: string;
  device_id: string;
  battery_id: string;
  rule_id: string;
  metric: string;
  op: AlertOp;
  threshold: number;
  clear_at: number;
  value: number;
  state: AlertState;
  opened_at: Date;
  acknowledged_at: Date | null;
  resolved_at: Date | null;
  resolved_value: number | null;
}

const ALERT_COLUMNS = 'a.alert_id, a.device_id, a.battery_id, a.rule_id, a.metric, a.op, a.threshold, a.clear_at, a.value, a.state, a.opened_at, a.acknowledged_at, a.resolved_at, a.resolved_value';

/** Alerts (a) the viewer sees: the sharing module's one rule, over the history's window (a later owner and their sharees see alerts opened from the release on). */
const VISIBLE_ALERTS = `alerts a JOIN ${VISIBLE_DEVICES}($1::boolean, $2::uuid) v ON v.device_id = a.device_id AND a.opened_at >= v.sees_from`;

function toAlert(row: AlertRow): Alert {
  return {
    alertId: row.alert_id,
    deviceId: row.device_id,
    batteryId: row.battery_id,
    ruleId: row.rule_id,
    metric: row.metric,
    op: row.op,
    threshold: row.threshold,
    clearAt: row.clear_at,
    value: row.value,
    state: row.state,
    openedAt: row.opened_at,
    acknowledgedAt: row.acknowledged_at,
    resolvedAt: row.resolved_at,
    resolvedValue: row.resolved_value,
  };
}

class SqlAlertWork implements AlertWork {
  constructor(
    readonly tx: SqlRunner,
    private readonly deviceIds: string[],
    private readonly directory: DeviceDirectory,
  ) {}

  async ownerOf(deviceId: string): Promise<string | null> {
    return (await this.directory.ownerOf(deviceId, this.tx))?.ownerId ?? null;
  }

  async series(): Promise<StoredSeries[]> {
    const rows = await this.tx.rows<{ device_id: string; battery_id: string; rule_id: string; watermark: Date | null; breaching_since: Date | null; open_alert_id: string | null; opened_at: Date | null; value: number | null }>(
      `SELECT s.device_id, s.battery_id, s.rule_id, s.watermark, s.breaching_since, s.open_alert_id, a.opened_at, a.value
         FROM alert_series s LEFT JOIN alerts a ON a.alert_id = s.open_alert_id
        WHERE s.device_id = ANY($1::text[])`,
      [this.deviceIds],
      'alert_series_read',
    );
    return rows.map((row) => ({
      deviceId: row.device_id,
      batteryId: row.battery_id,
      ruleId: row.rule_id,
      openAlertId: row.open_alert_id,
      state: { watermark: row.watermark, breachingSince: row.breaching_since, open: row.open_alert_id && row.opened_at && row.value !== null ? { openedAt: row.opened_at, value: row.value } : null },
    }));
  }

  async saveSeries(series: StoredSeries[]): Promise<void> {
    if (series.length === 0) return;
    await this.tx.rows(
      `INSERT INTO alert_series (device_id, battery_id, rule_id, watermark, breaching_since, open_alert_id)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::uuid[])
       ON CONFLICT (device_id, battery_id, rule_id) DO UPDATE SET watermark = EXCLUDED.watermark, breaching_since = EXCLUDED.breaching_since, open_alert_id = EXCLUDED.open_alert_id`,
      [
        series.map((each) => each.deviceId),
        series.map((each) => each.batteryId),
        series.map((each) => each.ruleId),
        series.map((each) => each.state.watermark),
        series.map((each) => each.state.breachingSince),
        series.map((each) => each.openAlertId),
      ],
      'alert_series_save',
    );
  }

  async dropSeries(keys: SeriesKey[]): Promise<void> {
    if (keys.length === 0) return;
    await this.tx.rows(
      `DELETE FROM alert_series s USING unnest($1::text[], $2::text[], $3::text[]) AS k (device_id, battery_id, rule_id)
        WHERE s.device_id = k.device_id AND s.battery_id = k.battery_id AND s.rule_id = k.rule_id`,
      [keys.map((key) => key.deviceId), keys.map((key) => key.batteryId), keys.map((key) => key.ruleId)],
      'alert_series_drop',
    );
  }

  async insertAlert(alert: Alert): Promise<void> {
    await this.tx.rows(
      `INSERT INTO alerts (alert_id, device_id, battery_id, rule_id, metric, op, threshold, clear_at, value, state, opened_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [alert.alertId, alert.deviceId, alert.batteryId, alert.ruleId, alert.metric, alert.op, alert.threshold, alert.clearAt, alert.value, alert.state, alert.openedAt],
    );
  }

  async resolveAlert(alertId: string, at: Date, value: number | null): Promise<Alert | null> {
    const [row] = await this.tx.rows<AlertRow>(
      `UPDATE alerts a SET state = 'resolved', resolved_at = $2, resolved_value = $3 WHERE a.alert_id = $1 AND a.state <> 'resolved' RETURNING ${ALERT_COLUMNS}`,
      [alertId, at, value],
    );
    return row ? toAlert(row) : null;
  }
}

/** Rules, series and alerts in plain SQL: the evaluation runs after every ingest flush that needs it. */
@Injectable()
export class SqlAlertStore extends AlertStore {
  constructor(
    private readonly sql: Sql,
    private readonly replica: ReplicaSql,
    private readonly directory: DeviceDirectory,
  ) {
    super();
  }

  async deviceRules(deviceIds: string[]): Promise<Map<string, AlertRule[]>> {
    const rows = await this.sql.rows<{ device_id: string; rules: AlertRule[] }>('SELECT device_id, rules FROM alert_rules WHERE device_id = ANY($1::text[])', [deviceIds], 'alert_rules_of');
    return new Map(rows.map((row) => [row.device_id, row.rules]));
  }

  async storedDefaults(): Promise<AlertRule[] | null> {
    const [row] = await this.sql.rows<{ rules: AlertRule[] }>('SELECT rules FROM alert_rule_defaults WHERE id = 1');
    return row?.rules ?? null;
  }

  async devicesWithSeries(deviceIds: string[]): Promise<Set<string>> {
    const rows = await this.sql.rows<{ device_id: string }>('SELECT DISTINCT device_id FROM alert_series WHERE device_id = ANY($1::text[])', [deviceIds], 'alert_series_of');
    return new Set(rows.map((row) => row.device_id));
  }

  forDevices<T>(deviceIds: string[], work: (unit: AlertWork) => Promise<T>): Promise<T> {
    const sorted = [...new Set(deviceIds)].sort();
    return this.sql.transaction(async (tx) => {
      // In one order everywhere, so two units sharing devices queue instead of deadlocking.
      await tx.rows('SELECT pg_advisory_xact_lock($1, hashtext(d)) FROM unnest($2::text[]) AS d', [DEVICE_LOCK_CLASSES.alerts, sorted], 'alert_locks');
      return work(new SqlAlertWork(tx, sorted, this.directory));
    });
  }

  async setDeviceRules(unit: AlertWork, deviceId: string, rules: AlertRule[] | null, now: Date): Promise<void> {
    if (rules === null) await unit.tx.rows('DELETE FROM alert_rules WHERE device_id = $1', [deviceId]);
    else {
      await unit.tx.rows(
        `INSERT INTO alert_rules (device_id, rules, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (device_id) DO UPDATE SET rules = EXCLUDED.rules, updated_at = EXCLUDED.updated_at`,
        [deviceId, JSON.stringify(rules), now],
      );
    }
  }

  async setDefaults(rules: AlertRule[], now: Date, onStored?: (tx: SqlRunner) => Promise<void>): Promise<void> {
    await this.sql.transaction(async (tx) => {
      await tx.rows(
        `INSERT INTO alert_rule_defaults (id, rules, updated_at) VALUES (1, $1, $2)
         ON CONFLICT (id) DO UPDATE SET rules = EXCLUDED.rules, updated_at = EXCLUDED.updated_at`,
        [JSON.stringify(rules), now],
      );
      await onStored?.(tx);
    });
  }

  async devicesFollowingDefaultsWithSeries(): Promise<string[]> {
    const rows = await this.sql.rows<{ device_id: string }>(
      'SELECT DISTINCT s.device_id FROM alert_series s WHERE NOT EXISTS (SELECT 1 FROM alert_rules r WHERE r.device_id = s.device_id) ORDER BY s.device_id',
    );
    return rows.map((row) => row.device_id);
  }

  ownerOf(deviceId: string): Promise<{ ownerId: string | null } | undefined> {
    return this.directory.ownerOf(deviceId);
  }

  /** May be a few seconds old: on a replica when one is close enough (one alert, find(), reads the primary). */
  async list(viewer: AlertsViewer, page: AlertsPage): Promise<Alert[]> {
    const rows = await this.replica.rows<AlertRow>(
      `SELECT ${ALERT_COLUMNS} FROM ${VISIBLE_ALERTS}
        WHERE ($3::text IS NULL OR a.device_id = $3)
          AND ($4::text IS NULL OR a.state = $4)
          AND ($5::timestamptz IS NULL OR (a.opened_at, a.alert_id) < ($5, $6::uuid))
        ORDER BY a.opened_at DESC, a.alert_id DESC
        LIMIT $7`,
      [viewer.isAdmin, viewer.userId, page.deviceId, page.state, page.before?.openedAt ?? null, page.before?.alertId ?? null, page.limit],
    );
    return rows.map(toAlert);
  }

  async find(viewer: AlertsViewer, alertId: string): Promise<Alert | null> {
    const [row] = await this.sql.rows<AlertRow>(`SELECT ${ALERT_COLUMNS} FROM ${VISIBLE_ALERTS} WHERE a.alert_id = $3`, [viewer.isAdmin, viewer.userId, alertId]);
    return row ? toAlert(row) : null;
  }

  async acknowledge(alertId: string, userId: string, now: Date): Promise<Alert | null> {
    const [row] = await this.sql.rows<AlertRow>(
      `UPDATE alerts a SET state = CASE WHEN a.state = 'open' THEN 'acknowledged' ELSE a.state END,
              acknowledged_at = COALESCE(a.acknowledged_at, $3), acknowledged_by = COALESCE(a.acknowledged_by, $2)
        WHERE a.alert_id = $1 RETURNING ${ALERT_COLUMNS}`,
      [alertId, userId, now],
    );
    return row ? toAlert(row) : null;
  }

  async countUnresolved(): Promise<UnresolvedAlerts> {
    const rows = await this.sql.rows<{ state: AlertState; n: number }>("SELECT state, count(*)::int AS n FROM alerts WHERE state <> 'resolved' GROUP BY state");
    const count = (state: AlertState) => rows.find((row) => row.state === state)?.n ?? 0;
    return { open: count('open'), acknowledged: count('acknowledged') };
  }
}
