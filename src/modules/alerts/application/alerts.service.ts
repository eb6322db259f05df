import { Injectable } from '@nestjs/common';
import type { AuditContext } from '../../audit/index.js';
import { Clock } from '../../../config/config.module.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { DeviceAccess } from '../../sharing/index.js';
import type { Alert } from '../domain/alert.js';
import type { AlertRule } from '../domain/alert-rule.js';
import { AlertStore, type AlertsPage, type AlertsViewer, type UnresolvedAlerts } from '../domain/alert.store.js';
import { AlertRules, type RulesView } from './alert-rules.service.js';

/** What owners, those a device is shared with, and administrators do with alerts and a device's rules (who may: DeviceAccess). */
@Injectable()
export class AlertsService {
  constructor(
    private readonly store: AlertStore,
    private readonly rules: AlertRules,
    private readonly clock: Clock,
    private readonly access: DeviceAccess,
  ) {}

  async rulesOf(viewer: AlertsViewer, deviceId: string): Promise<RulesView> {
    await this.access.toSee(viewer, deviceId);
    return this.rules.ofDevice(deviceId);
  }

  async setRules(viewer: AlertsViewer, deviceId: string, rules: AlertRule[] | null, by: AuditContext): Promise<RulesView> {
    await this.access.toManage(viewer, deviceId);
    return this.rules.setForDevice(deviceId, rules, by);
  }

  list(viewer: AlertsViewer, page: AlertsPage): Promise<Alert[]> {
    return this.store.list(viewer, page);
  }

  async acknowledge(viewer: AlertsViewer, alertId: string): Promise<Alert> {
    const visible = await this.store.find(viewer, alertId);
    if (!visible) throw new NotFoundError('No visible alert has this id.');
    // Acknowledging is a change: the owner's, an installer's or an administrator's, not a viewer's.
    await this.access.toManage(viewer, visible.deviceId);
    const alert = await this.store.acknowledge(alertId, viewer.userId, this.clock.now());
    if (!alert) throw new NotFoundError('No visible alert has this id.');
    return alert;
  }

  /** Every alert not resolved yet, by state, whoever owns the device: for the operator's metrics. */
  unresolved(): Promise<UnresolvedAlerts> {
    return this.store.countUnresolved();
  }
}
