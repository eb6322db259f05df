import { performance } from 'node:perf_hooks';
import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { JobQueue, type QueueSpec } from '../../../shared/jobs/job-queue.js';
import { DAY_MS, TelemetryCompactionStore } from '../domain/telemetry-compaction.store.js';

export const COMPACTION_QUEUE = 'telemetry.compaction';

const QUEUE: QueueSpec = { name: COMPACTION_QUEUE, retry: { delaySec: 60, delayMaxSec: 3600, limit: 24 }, expireInSec: 900 };

/** One job compacts for about this long, then queues the next: no job holds a worker for hours. */
const JOB_BUDGET_MS = 60_000;

/** Devices read per look for settled rows. */
const DEVICES_PER_LOOK = 100;

export interface CompactionResult {
  days: number;
  records: number;
  /** False when the run stopped at its deadline with settled rows left. */
  done: boolean;
}

/**
 * Moves settled days into the compact layout: every UTC day that ended TELEMETRY_SETTLED_HOURS ago
 * or more and still has records as rows, one device's day per transaction (a crash loses nothing
 * and doubles nothing: the day is compacted or still rows). Records that arrive later for a
 * compacted day land as rows and are merged into it at the next run. Runs as a job of the durable
 * queue, queued hourly (once per hour whatever the number of instances), on one instance at a time
 * (an advisory lock).
 */
@Injectable()
export class TelemetryCompaction implements OnModuleInit {
  private readonly logger = new Logger(TelemetryCompaction.name);

  constructor(
    private readonly store: TelemetryCompactionStore,
    private readonly jobs: JobQueue,
    private readonly clock: Clock,
    private readonly env: Env,
  ) {}

  /** Queued hourly, and once as soon as the job queue runs (a restart resumes what a crash cut short); not with TELEMETRY_COMPACTION_ENABLED=false. */
  onModuleInit(): void {
    this.jobs.define(QUEUE, () => this.runJob());
    if (this.env.TELEMETRY_COMPACTION_ENABLED) this.jobs.whenRunning('telemetry compaction', () => this.jobs.send(COMPACTION_QUEUE, {}));
  }

  @Cron(CronExpression.EVERY_HOUR, { name: 'telemetry-compaction' })
  async hourly(): Promise<void> {
    if (this.env.TELEMETRY_COMPACTION_ENABLED) await this.schedule();
  }

  /** Queues a compaction job: one per hour, however many instances ask. */
  async schedule(): Promise<void> {
    await this.jobs.send(COMPACTION_QUEUE, {}, { oncePer: { key: 'telemetry-compaction', seconds: 3600 } });
  }

  /** The first instant not settled: the UTC midnight at or before now − TELEMETRY_SETTLED_HOURS. */
  settledBefore(now: Date): Date {
    const cut = now.getTime() - this.env.TELEMETRY_SETTLED_HOURS * 3_600_000;
    return new Date(Math.floor(cut / DAY_MS) * DAY_MS);
  }

  /**
   * Compacts every settled day with rows, or until `deadline` (performance.now() milliseconds);
   * undefined when another instance is compacting.
   */
  compactSettled(deadline = Number.POSITIVE_INFINITY): Promise<CompactionResult | undefined> {
    return this.store.exclusively(async () => {
      const before = this.settledBefore(this.clock.now());
      const result: CompactionResult = { days: 0, records: 0, done: false };
      let after: string | null = null;
      for (;;) {
        const pending = await this.store.pending(before, after, DEVICES_PER_LOOK);
        if (pending.length === 0) return { ...result, done: true };
        for (const { deviceId, day: first } of pending) {
          for (let day: Date | null = first; day; day = await this.store.nextDay(deviceId, new Date(day.getTime() + DAY_MS), before)) {
            if (performance.now() > deadline) return result;
            result.records += await this.store.compactDay(deviceId, day);
            result.days += 1;
          }
          after = deviceId;
        }
      }
    });
  }

  private async runJob(): Promise<void> {
    const started = performance.now();
    const result = await this.compactSettled(started + JOB_BUDGET_MS);
    if (!result) return;
    if (result.days > 0) this.logger.log({ days: result.days, records: result.records, ms: Math.round(performance.now() - started) }, 'Telemetry days compacted');
    if (!result.done) await this.jobs.send(COMPACTION_QUEUE, {});
  }
}
