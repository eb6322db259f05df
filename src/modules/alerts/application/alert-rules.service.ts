import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import type { BoundedMap } from '../../../shared/memory/bounded-map.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { DEFAULT_ALERT_RULES, validateAlertRules, type AlertRule } from '../domain/alert-rule.js';
import { AlertStore } from '../domain/alert.store.js';
import { AlertTransitions } from './alert-transitions.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';

export interface RulesView {
  rules: AlertRule[];
  /** True when the device has no rules of its own and follows the fleet defaults. */
  inherited: boolean;
}

const copy = (rules: readonly AlertRule[]): AlertRule[] => rules.map((rule) => ({ ...rule }));

/**
 * Which rules apply to a device: its own, else the fleet defaults an administrator set, else the
 * shipped defaults. Cached in memory while the change channel is live (ChangeFeed: triggers
 * announce every change to alert_rules and alert_rule_defaults), read from the database otherwise.
 */
@Injectable()
export class AlertRules implements OnModuleInit {
  /** deviceId → its own rules, or null: none, it follows the defaults. */
  private readonly own: BoundedMap<AlertRule[] | null>;
  private defaults: AlertRule[] | undefined;

  constructor(
    private readonly store: AlertStore,
    private readonly feed: ChangeFeed,
    private readonly transitions: AlertTransitions,
    private readonly clock: Clock,
    private readonly audit: AuditLog,
    caches: MemoryCaches,
  ) {
    this.own = caches.perDevice('alert_rules');
  }

  onModuleInit(): void {
    this.feed.subscribe('alert_rules', () => this.own.clear());
    this.feed.subscribe('alert_rule_defaults', () => (this.defaults = undefined));
  }

  /** The rules of each device. */
  async rulesFor(deviceIds: string[]): Promise<Map<string, AlertRule[]>> {
    const live = this.feed.live;
    const epoch = this.feed.epoch;
    const cached = new Map<string, AlertRule[] | null>();
    if (live) for (const id of deviceIds) if (this.own.has(id)) cached.set(id, this.own.get(id) as AlertRule[] | null);
    const missing = deviceIds.filter((id) => !cached.has(id));
    const loaded = missing.length > 0 ? await this.store.deviceRules(missing) : new Map<string, AlertRule[]>();
    const defaults = live && this.defaults ? this.defaults : ((await this.store.storedDefaults()) ?? copy(DEFAULT_ALERT_RULES));
    // A change heard while loading may be older or newer than what was read: cache nothing then.
    if (live && this.feed.epoch === epoch) {
      for (const id of missing) this.own.set(id, loaded.get(id) ?? null);
      this.defaults = defaults;
    }
    const result = new Map<string, AlertRule[]>();
    for (const id of deviceIds) result.set(id, cached.get(id) ?? loaded.get(id) ?? defaults);
    return result;
  }

  async ofDevice(deviceId: string): Promise<RulesView> {
    const own = (await this.store.deviceRules([deviceId])).get(deviceId);
    return own ? { rules: own, inherited: false } : { rules: await this.currentDefaults(), inherited: true };
  }

  /** Replaces the device's own rules; null goes back to the fleet defaults. Alerts of rules that are gone or disabled resolve. */
  async setForDevice(deviceId: string, rules: AlertRule[] | null, by: AuditContext): Promise<RulesView> {
    if (rules) validateAlertRules(rules);
    if (!(await this.store.ownerOf(deviceId))) throw new NotFoundError('No visible device has this id.');
    const now = this.clock.now();
    const effective = rules ?? (await this.currentDefaults());
    await this.store.forDevices([deviceId], async (unit) => {
      await this.store.setDeviceRules(unit, deviceId, rules, now);
      await this.transitions.retire(unit, deviceId, effective, now);
      const detail = rules ? { ruleIds: rules.map((rule) => rule.ruleId) } : { inherited: true };
      await this.audit.record(unit.tx, { by, action: 'alert_rules.changed', target: `device:${deviceId}`, deviceId, detail, at: now });
    });
    this.own.delete(deviceId);
    return rules ? { rules, inherited: false } : { rules: effective, inherited: true };
  }

  async currentDefaults(): Promise<AlertRule[]> {
    return (await this.store.storedDefaults()) ?? copy(DEFAULT_ALERT_RULES);
  }

  async setDefaults(rules: AlertRule[], by: AuditContext): Promise<AlertRule[]> {
    validateAlertRules(rules);
    const now = this.clock.now();
    await this.store.setDefaults(rules, now, (tx) =>
      this.audit.record(tx, { by, action: 'alert_rules.defaults_changed', target: 'alert_rule_defaults', detail: { ruleIds: rules.map((rule) => rule.ruleId) }, at: now }),
    );
    this.defaults = undefined;
    for (const deviceId of await this.store.devicesFollowingDefaultsWithSeries()) {
      await this.store.forDevices([deviceId], (unit) => this.transitions.retire(unit, deviceId, rules, now));
    }
    return rules;
  }
}
