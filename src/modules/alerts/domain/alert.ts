import type { AlertOp } from './alert-rule.js';

export const ALERT_STATES = ['open', 'acknowledged', 'resolved'] as const;
export type AlertState = (typeof ALERT_STATES)[number];

/** One alert: opened once when its rule's condition held, resolved once when the value crossed clearAt. */
export interface Alert {
  alertId: string;
  deviceId: string;
  batteryId: string;
  ruleId: string;
  metric: string;
  op: AlertOp;
  threshold: number;
  clearAt: number;
  /** The value that opened it. */
  value: number;
  state: AlertState;
  openedAt: Date;
  acknowledgedAt: Date | null;
  resolvedAt: Date | null;
  /** The value that resolved it; null when it was closed because its rule was removed or disabled. */
  resolvedValue: number | null;
}
