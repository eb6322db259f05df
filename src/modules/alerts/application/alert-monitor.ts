import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { TelemetryFeed, type StoredTelemetry } from '../../telemetry/index.js';
import { breaches, ruleAppliesTo } from '../domain/alert-evaluator.js';
import type { AlertRule } from '../domain/alert-rule.js';
import { AlertStore } from '../domain/alert.store.js';
import { AlertRules } from './alert-rules.service.js';
import { AlertTransitions } from './alert-transitions.js';

/**
 * Flushes waiting for evaluation at most. Past it (the database far behind the ingest), new ones
 * are not evaluated and the log says so: alerting degrades before memory does.
 */
const MAX_PENDING_FLUSHES = 2_000;

/** Whether any record newer than what the device sent before breaches one of its enabled rules. */
function breachesAny(stored: StoredTelemetry, rules: AlertRule[]): boolean {
  const after = stored.previousNewestTs?.getTime() ?? -Infinity;
  return stored.records.some(
    (record) =>
      record.ts.getTime() > after &&
      rules.some((rule) => rule.enabled && ruleAppliesTo(rule, record.batteryId) && typeof record.metrics[rule.metric] === 'number' && breaches(rule, record.metrics[rule.metric])),
  );
}

/**
 * Evaluates alert rules on what ingest stored, after the flush committed and its requests were
 * answered, so alerting costs ingest no latency. Flushes are evaluated one after the other on each
 * instance; a device is touched only when one of its new records breaches a rule or it has a
 * series in progress (a breach running or an alert open), so quiet telemetry costs one indexed
 * lookup per flush. Off with ALERTS_ENABLED=false (the benchmark's comparison).
 */
@Injectable()
export class AlertMonitor implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(AlertMonitor.name);
  private tail: Promise<void> = Promise.resolve();
  private pending = 0;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly feed: TelemetryFeed,
    private readonly rules: AlertRules,
    private readonly store: AlertStore,
    private readonly transitions: AlertTransitions,
    private readonly env: Env,
  ) {}

  onModuleInit(): void {
    if (this.env.ALERTS_ENABLED) this.unsubscribe = this.feed.subscribe((stored) => this.enqueue(stored));
  }

  async onApplicationShutdown(): Promise<void> {
    this.unsubscribe?.();
    await this.idle();
  }

  /** Resolves once every flush handed over so far has been evaluated (tests, shutdown). */
  idle(): Promise<void> {
    return this.tail;
  }

  private enqueue(stored: StoredTelemetry[]): void {
    if (this.pending >= MAX_PENDING_FLUSHES) {
      this.logger.warn({ devices: stored.length }, 'Alert evaluation is behind; telemetry of this flush is not evaluated');
      return;
    }
    this.pending += 1;
    this.tail = this.tail.then(() =>
      this.evaluate(stored)
        .catch((error: unknown) => this.logger.warn({ code: (error as { code?: unknown }).code }, 'Alert evaluation of a flush failed'))
        .finally(() => (this.pending -= 1)),
    );
  }

  async evaluate(stored: StoredTelemetry[]): Promise<void> {
    stored = stored.filter((entry) => entry.records.length > 0);
    if (stored.length === 0) return;
    const deviceIds = stored.map((entry) => entry.deviceId);
    const [rules, inProgress] = await Promise.all([this.rules.rulesFor(deviceIds), this.store.devicesWithSeries(deviceIds)]);
    for (const entry of stored) {
      const deviceRules = rules.get(entry.deviceId) ?? [];
      if (!inProgress.has(entry.deviceId) && !breachesAny(entry, deviceRules)) continue;
      await this.store.forDevice(entry.deviceId, (unit) => this.transitions.evaluate(unit, entry.deviceId, entry.ownerId, deviceRules, entry.previousNewestTs, entry.records));
    }
  }
}
