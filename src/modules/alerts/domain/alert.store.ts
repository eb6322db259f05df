import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { Alert, AlertState } from './alert.js';
import type { AlertRule } from './alert-rule.js';
import type { SeriesState } from './alert-evaluator.js';

/** One series: a device, one of its batteries, one rule. */
export interface SeriesKey {
  deviceId: string;
  batteryId: string;
  ruleId: string;
}

/** A series in progress as stored: its state and, when an alert is open, which one. */
export interface StoredSeries extends SeriesKey {
  state: SeriesState;
  openAlertId: string | null;
}

export interface AlertsViewer {
  userId: string;
  isAdmin: boolean;
}

export interface AlertsPage {
  deviceId: string | null;
  state: AlertState | null;
  before: { openedAt: Date; alertId: string } | null;
  limit: number;
}

/** The work of one evaluation or rule change of some devices, inside one transaction holding their alert locks. */
export interface AlertWork {
  readonly tx: SqlRunner;
  /** The device's owner now (whom the events of a rule change belong to). */
  ownerOf(deviceId: string): Promise<string | null>;
  /** The series in progress of the unit's devices. */
  series(): Promise<StoredSeries[]>;
  saveSeries(series: StoredSeries[]): Promise<void>;
  dropSeries(keys: SeriesKey[]): Promise<void>;
  insertAlert(alert: Alert): Promise<void>;
  /** Resolves the alert if it is not resolved yet; null when it was. */
  resolveAlert(alertId: string, at: Date, value: number | null): Promise<Alert | null>;
}

/** Port for rules, series and alerts. The abstract class doubles as the injection token. */
export abstract class AlertStore {
  /** The devices among `deviceIds` that have rules of their own, with those rules. */
  abstract deviceRules(deviceIds: string[]): Promise<Map<string, AlertRule[]>>;
  /** The fleet defaults an administrator set; null while the shipped ones apply. */
  abstract storedDefaults(): Promise<AlertRule[] | null>;
  /** Of `deviceIds`, those with a series in progress. */
  abstract devicesWithSeries(deviceIds: string[]): Promise<Set<string>>;
  /**
   * Runs `work` in one transaction holding the alert locks of the devices (taken in order), so
   * evaluations and rule changes of one device never interleave, on this instance or another.
   */
  abstract forDevices<T>(deviceIds: string[], work: (unit: AlertWork) => Promise<T>): Promise<T>;
  /** Replaces the device's own rules (null: back to the fleet defaults), inside `unit`'s transaction. */
  abstract setDeviceRules(unit: AlertWork, deviceId: string, rules: AlertRule[] | null, now: Date): Promise<void>;
  /** Stores the fleet defaults; `onStored` runs in the same transaction. */
  abstract setDefaults(rules: AlertRule[], now: Date, onStored?: (tx: SqlRunner) => Promise<void>): Promise<void>;
  /** Devices without rules of their own that have a series in progress. */
  abstract devicesFollowingDefaultsWithSeries(): Promise<string[]>;
  /** The device's owner; undefined when the device does not exist. */
  abstract ownerOf(deviceId: string): Promise<{ ownerId: string | null } | undefined>;
  abstract list(viewer: AlertsViewer, page: AlertsPage): Promise<Alert[]>;
  abstract find(viewer: AlertsViewer, alertId: string): Promise<Alert | null>;
  /** Marks it acknowledged (if open) and records who and when (once); the alert as it is then. */
  abstract acknowledge(alertId: string, userId: string, now: Date): Promise<Alert | null>;
  /** Alerts not resolved yet, of every device, by state. */
  abstract countUnresolved(): Promise<UnresolvedAlerts>;
}

export interface UnresolvedAlerts {
  open: number;
  acknowledged: number;
}
