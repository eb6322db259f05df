import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Env } from '../../../config/env.js';
import { TelemetryFeed, type StoredTelemetry } from '../../telemetry/index.js';
import { breaches, ruleAppliesTo } from '../domain/alert-evaluator.js';
import { isCrashRule, type AlertRule } from '../domain/alert-rule.js';
import { AlertStore } from '../domain/alert.store.js';
import { AlertRules } from './alert-rules.service.js';
import { AlertTransitions, type DeviceRecords } from './alert-transitions.js';

/**
 * Devices' records waiting for evaluation at most. Past it (the database far behind the ingest),
 * new flushes are not evaluated and the log says so: alerting degrades before memory does.
 */
const MAX_PENDING_RECORDS = 200_000;

/** Flushes one evaluation takes at most. */
const MAX_FLUSHES_PER_EVALUATION = 500;

/**
 * Least time from the start of one evaluation to the start of the next. An evaluation's fixed cost
 * (a lookup, a transaction, its locks) is then shared by every flush of the window instead of paid
 * per flush under load; alerts wait tens of seconds by rule anyway, so the delay is immaterial.
 */
const EVALUATION_INTERVAL_MS = 200;

/** The records of a flush that count: newer than what the device had sent before that flush. */
function newRecords(stored: StoredTelemetry): StoredTelemetry['records'] {
  return stored.records.filter((record) => record.ts.getTime() > (stored.previousNewestTs.get(record.batteryId)?.getTime() ?? -Infinity));
}

/** Whether any of the records breaches one of the device's enabled rules. */
function breachesAny(records: StoredTelemetry['records'], rules: AlertRule[]): boolean {
  return records.some((record) =>
    rules.some((rule) => rule.enabled && !isCrashRule(rule) && ruleAppliesTo(rule, record.batteryId) && typeof record.metrics[rule.metric] === 'number' && breaches(rule, record.metrics[rule.metric])),
  );
}

/**
 * The flushes waiting, per device: each flush's late records dropped (by its own previous newest
 * time), the rest in arrival order, with the earliest flush's previous newest time. A record that
 * survives a later flush's filter is newer than everything of the earlier flushes, so the merged
 * records judge the series exactly as flush after flush would.
 */
function mergeByDevice(flushes: StoredTelemetry[][]): StoredTelemetry[] {
  const merged = new Map<string, { entry: StoredTelemetry; batteries: Set<string> }>();
  for (const flush of flushes) {
    for (const entry of flush) {
      const records = newRecords(entry);
      const current = merged.get(entry.deviceId);
      if (!current) {
        merged.set(entry.deviceId, { entry: { ...entry, previousNewestTs: new Map(entry.previousNewestTs), records }, batteries: new Set(records.map((record) => record.batteryId)) });
        continue;
      }
      // A battery with no records so far takes this flush's previous time; one that has records
      // keeps the earlier flush's (this flush's records of it are newer than all of those).
      for (const [batteryId, ts] of entry.previousNewestTs) if (!current.batteries.has(batteryId)) current.entry.previousNewestTs.set(batteryId, ts);
      for (const record of records) {
        current.entry.records.push(record);
        current.batteries.add(record.batteryId);
      }
      current.entry.ownerId = entry.ownerId;
    }
  }
  return [...merged.values()].map(({ entry }) => entry).filter((entry) => entry.records.length > 0);
}

/**
 * Evaluates alert rules on what ingest stored, after the flush committed and its requests were
 * answered, so alerting costs ingest no latency. One evaluation at a time per instance, at most one
 * per EVALUATION_INTERVAL_MS, takes every flush that arrived meanwhile; a device is part of it only when one of its new records breaches a
 * rule or it has a series in progress (a breach running or an alert open), so quiet telemetry
 * costs one indexed lookup per evaluation, and the devices that need it share one transaction.
 * Off with ALERTS_ENABLED=false (the benchmark's comparison).
 */
@Injectable()
export class AlertMonitor implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(AlertMonitor.name);
  private pending: StoredTelemetry[][] = [];
  private pendingRecords = 0;
  private running: Promise<void> | null = null;
  private lastEvaluation = -Infinity;
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
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private enqueue(stored: StoredTelemetry[]): void {
    const records = stored.reduce((sum, entry) => sum + entry.records.length, 0);
    if (this.pendingRecords + records > MAX_PENDING_RECORDS) {
      this.logger.warn({ devices: stored.length }, 'Alert evaluation is behind; telemetry of this flush is not evaluated');
      return;
    }
    this.pending.push(stored);
    this.pendingRecords += records;
    this.running ??= this.drain();
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const wait = this.lastEvaluation + EVALUATION_INTERVAL_MS - performance.now();
      if (wait > 0) await sleep(wait);
      this.lastEvaluation = performance.now();
      // A bounded share at a time: the merge and the evaluation run on the event loop the ingest needs.
      const flushes = this.pending.splice(0, MAX_FLUSHES_PER_EVALUATION);
      this.pendingRecords -= flushes.reduce((sum, flush) => sum + flush.reduce((records, entry) => records + entry.records.length, 0), 0);
      await this.evaluate(mergeByDevice(flushes)).catch((error: unknown) => this.logger.warn({ code: (error as { code?: unknown }).code }, 'Alert evaluation failed'));
    }
    this.running = null;
  }

  async evaluate(stored: StoredTelemetry[]): Promise<void> {
    if (stored.length === 0) return;
    const deviceIds = stored.map((entry) => entry.deviceId);
    const [rules, inProgress] = await Promise.all([this.rules.rulesFor(deviceIds), this.store.devicesWithSeries(deviceIds)]);
    const candidates = stored.filter((entry) => inProgress.has(entry.deviceId) || breachesAny(entry.records, rules.get(entry.deviceId) ?? []));
    if (candidates.length === 0) return;
    await this.store.forDevices(
      candidates.map((entry) => entry.deviceId),
      async (unit) => {
        // Read again under the lock: a rule change that committed meanwhile is what counts.
        const current = await this.rules.rulesFor(candidates.map((entry) => entry.deviceId));
        const devices: DeviceRecords[] = candidates.map((entry) => ({ deviceId: entry.deviceId, ownerId: entry.ownerId, rules: current.get(entry.deviceId) ?? [], previousNewestTs: entry.previousNewestTs, records: entry.records }));
        return this.transitions.evaluate(unit, devices);
      },
    );
  }
}
