import { Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { PgBoss, type Job, type JobWithMetadata, type QueueOptions } from 'pg-boss';
import type { Clock } from '../../config/config.module.js';
import { DatabaseConnection } from '../database/database-connection.js';
import { DatabaseUnavailableError } from '../database/database-errors.js';
import type { SqlRunner } from '../database/sql.js';
import { jobIdFor } from './job-id.js';
import type { RetryPolicy } from './retry-policy.js';

/** Where pg-boss keeps its tables, apart from the service's own (and from the schema drift check). */
export const JOBS_SCHEMA = 'pgboss';

/** Every delivery that ran out of retries lands here, whatever its channel: the failed-deliveries list. */
export const FAILED_DELIVERIES_QUEUE = 'deliveries.failed';
const FAILED_DELIVERIES_KEPT_SEC = 30 * 24 * 3600;

export interface QueueSpec {
  name: string;
  retry: RetryPolicy;
  /** An attempt still running after this long counts as failed (a worker that died mid-job). */
  expireInSec: number;
  /** Failed jobs move to the failed-deliveries list instead of just staying failed. */
  deliveries?: boolean;
}

export interface JobContext {
  id: string;
  /** 0 on the first attempt. */
  retryCount: number;
}

export type JobHandler<T> = (data: T, job: JobContext) => Promise<void>;

/**
 * An attempt that failed for a reason worth recording: only `code` is stored with the job (never a
 * message that could hold an address, a URL or a token) and shown in the failed-deliveries list.
 */
export class JobAttemptFailed extends Error {
  constructor(readonly code: string) {
    super(code);
    this.name = 'JobAttemptFailed';
  }
}

export interface SendOptions {
  /** A stable id (UUID): a job whose id exists already is not enqueued again. */
  id?: string;
  startAfterSec?: number;
  /**
   * At most one job per `key` in each `seconds`-long slot: a send while the current slot has its
   * job goes to the next slot (one digest a minute, say), further ones are dropped. Slots are read
   * from the service's Clock, not the database's, and replace `id`.
   */
  oncePer?: { key: string; seconds: number };
}

export interface FailedJob<T> {
  id: string;
  queue: string;
  data: T;
  attempts: number;
  lastErrorCode: string;
  createdAt: Date;
  failedAt: Date;
}

/** One queue's jobs as pg-boss's monitor last counted them (every minute). */
export interface QueueCounts {
  queue: string;
  /** Waiting: ready now, or due later (a retry's backoff, a delayed job). */
  queued: number;
  active: number;
  /** Failed for good and still kept (retention), so a rolling count of recent failures. */
  failed: number;
}

interface Registration {
  spec: QueueSpec;
  handler?: JobHandler<unknown>;
  concurrency: number;
}

/** pg-boss speaks to a transaction through this shape; SqlRunner (Sql.transaction, Orm.transaction) fits it. */
function asBossDatabase(tx: SqlRunner) {
  return { executeSql: async (text: string, values?: unknown[]) => ({ rows: await tx.rows<Record<string, unknown>>(text, values ?? []) }) };
}

/**
 * The durable job queue: pg-boss on the service's own PostgreSQL (schema `pgboss`), so the
 * embedded default, a managed server and many instances need nothing else. pg-boss claims jobs
 * with SKIP LOCKED, so with several instances each job runs on one of them at a time; a job whose
 * worker died is retried after its expiry.
 *
 * Modules `define` their queues (with the handler, if this instance should work them) while they
 * start; the queue starts once the database is up (DatabaseConnection.atStartup), creates or
 * updates those queues and starts the workers. `send` with a transaction writes the job in that
 * transaction: a change and the job that reports it commit or roll back together.
 */
export class JobQueue implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Jobs');
  private readonly registrations = new Map<string, Registration>();
  private boss: PgBoss | null = null;
  private started = false;
  private stopping = false;
  /** Tasks waiting for the queue to start (whenRunning). */
  private readonly onStart: Array<{ name: string; task: () => Promise<unknown> }> = [];

  constructor(
    private readonly settings: { url: string; pollIntervalMs: number; poolSize?: number },
    private readonly database: DatabaseConnection,
    private readonly clock: Clock,
  ) {}

  define<T>(spec: QueueSpec, handler?: JobHandler<T>, options: { concurrency?: number } = {}): void {
    if (this.started) throw new Error(`queue ${spec.name} defined after the job queue started`);
    this.registrations.set(spec.name, { spec, handler: handler as JobHandler<unknown> | undefined, concurrency: options.concurrency ?? 1 });
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.database.atStartup('job queue', () => this.start());
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    const boss = this.boss;
    this.boss = null;
    // Running jobs get a few seconds to finish; one cut short is retried after its expiry.
    await boss?.stop({ graceful: true, timeout: 3_000, close: true }).catch(() => undefined);
  }

  /**
   * Runs `task` once the queue runs: now if it does, else as soon as it starts, however long the
   * database takes to come up. A task that fails is logged (its code) and not retried.
   */
  whenRunning(name: string, task: () => Promise<unknown>): void {
    if (this.started) void this.runStartTask(name, task);
    else this.onStart.push({ name, task });
  }

  private async runStartTask(name: string, task: () => Promise<unknown>): Promise<void> {
    if (this.stopping) return;
    await task().catch((error: { code?: unknown }) => this.logger.warn({ task: name, code: error.code }, 'Start-up job task failed'));
  }

  /**
   * Enqueues a job; with `tx`, inside that transaction. A job with an `id` that exists already is
   * not enqueued again (null): a stable id makes a repeated report harmless.
   */
  async send<T extends object>(queue: string, data: T, options: SendOptions = {}, tx?: SqlRunner): Promise<string | null> {
    const boss = this.runningBoss();
    if (!this.registrations.has(queue)) throw new Error(`queue ${queue} is not defined`);
    const { oncePer, ...plain } = options;
    if (oncePer) return this.sendOncePer(boss, queue, data, oncePer, tx);
    return this.insert(boss, queue, data, plain, tx);
  }

  /**
   * The slot's job has an id derived from the key and the slot, so a second send in the slot finds
   * it taken; the next slot's job starts a second into that slot, after every send of this one.
   */
  private async sendOncePer<T extends object>(boss: PgBoss, queue: string, data: T, { key, seconds }: { key: string; seconds: number }, tx?: SqlRunner): Promise<string | null> {
    const slotMs = seconds * 1000;
    const now = this.clock.now().getTime();
    const slot = Math.floor(now / slotMs);
    const current = await this.insert(boss, queue, data, { id: jobIdFor(queue, key, String(slot)) }, tx);
    if (current !== null) return current;
    const startAfterSec = Math.ceil(((slot + 1) * slotMs - now) / 1000) + 1;
    return this.insert(boss, queue, data, { id: jobIdFor(queue, key, String(slot + 1)), startAfterSec }, tx);
  }

  private async insert<T extends object>(boss: PgBoss, queue: string, data: T, options: Pick<SendOptions, 'id' | 'startAfterSec'>, tx?: SqlRunner): Promise<string | null> {
    return boss.send(queue, data, {
      ...(options.id ? { id: options.id } : {}),
      ...(options.startAfterSec ? { startAfter: options.startAfterSec } : {}),
      ...(tx ? { db: asBossDatabase(tx) } : {}),
    });
  }

  /** The failed deliveries, oldest first, after the job id `after`. */
  async failedDeliveries<T>(options: { limit: number; after?: string }): Promise<FailedJob<T>[]> {
    const boss = this.runningBoss();
    const jobs = (await boss.findJobs<T>(FAILED_DELIVERIES_QUEUE, { queued: true, limit: options.limit, ...(options.after ? { after: options.after } : {}) })) as JobWithMetadata<T>[];
    return jobs.map((job) => ({
      id: job.id,
      queue: job.sourceName ?? job.name,
      data: job.data,
      attempts: (job.sourceRetryCount ?? 0) + 1,
      lastErrorCode: errorCodeOf(job.sourceOutput),
      createdAt: job.sourceCreatedOn ?? job.createdOn,
      failedAt: job.createdOn,
    }));
  }

  /** Every queue's counts, from pg-boss's queue table: one small read, however many jobs there are. */
  async counts(): Promise<QueueCounts[]> {
    const queues = await this.runningBoss().getQueues();
    return queues.map((queue) => ({ queue: queue.name, queued: queue.queuedCount, active: queue.activeCount, failed: queue.failedCount }));
  }

  /** A job's state, for tests and diagnostics. */
  async stateOf(queue: string, id: string): Promise<JobWithMetadata['state'] | null> {
    return (await this.runningBoss().getJobById(queue, id))?.state ?? null;
  }

  private runningBoss(): PgBoss {
    if (!this.boss || !this.started) throw new DatabaseUnavailableError('not-connected');
    return this.boss;
  }

  private async start(): Promise<void> {
    if (this.stopping || this.started) return;
    const boss = new PgBoss({
      connectionString: this.settings.url,
      schema: JOBS_SCHEMA,
      application_name: 'device-cloud-jobs',
      max: this.settings.poolSize ?? 3,
      useListenNotify: true,
      // No cron schedules: the service's periodic work runs on @nestjs/schedule under advisory locks.
      schedule: false,
    });
    // pg-boss reports trouble (the database went away, a slow query) as events; the message may
    // quote SQL, so the log gets the code only. Polling continues and recovers by itself. An
    // unreachable database is the outage the service logs once (DatabaseOutage), not a line per poll.
    boss.on('error', (error: Error & { code?: unknown }) => {
      if (!this.database.reportUnavailable(error)) this.logger.warn({ code: error.code ?? error.name }, 'Job queue error');
    });
    boss.on('warning', (warning: { data?: { type?: unknown } }) => this.logger.warn({ type: warning.data?.type }, 'Job queue warning'));
    this.boss = boss;
    try {
      await boss.start();
      await this.ensureQueue(boss, FAILED_DELIVERIES_QUEUE, { retentionSeconds: FAILED_DELIVERIES_KEPT_SEC, deleteAfterSeconds: FAILED_DELIVERIES_KEPT_SEC });
      for (const { spec } of this.registrations.values()) await this.ensureQueue(boss, spec.name, queueOptions(spec));
      for (const [name, registration] of this.registrations) if (registration.handler) await this.work(boss, name, registration);
    } catch (error) {
      this.boss = null;
      await boss.stop({ graceful: false, close: true }).catch(() => undefined);
      throw error;
    }
    this.started = true;
    if (this.stopping) return this.onApplicationShutdown();
    for (const { name, task } of this.onStart.splice(0)) await this.runStartTask(name, task);
  }

  private async ensureQueue(boss: PgBoss, name: string, options: QueueOptions & { deadLetter?: string }): Promise<void> {
    if (await boss.getQueue(name)) {
      const { deadLetter: _fixedAtCreation, ...changeable } = options;
      await boss.updateQueue(name, changeable);
    } else {
      // Two instances starting together may both get here; the second create is refused.
      await boss.createQueue(name, { ...options, notify: true }).catch(async (error: unknown) => {
        if (!(await boss.getQueue(name))) throw error;
      });
    }
  }

  /**
   * One pg-boss worker per unit of concurrency, each woken again as soon as it has done a job. A
   * worker otherwise waits a poll interval after every job: NOTIFY wakes it for a job sent now,
   * not for one that falls due later (a delayed job, a retry), so a backlog of due jobs — the
   * retries after an SMTP outage, say — would go out at one job per worker per interval. Woken,
   * the worker fetches again at once; a fetch that finds nothing, or a job that failed (the server
   * it needs may be down: no point hurrying the next attempt at it), falls back to the interval.
   */
  private async work(boss: PgBoss, name: string, { handler, concurrency }: Registration): Promise<void> {
    const pollingIntervalSeconds = this.settings.pollIntervalMs / 1000;
    for (let i = 0; i < concurrency; i++) {
      const worker: { id?: string } = {};
      worker.id = await boss.work(name, { localConcurrency: 1, pollingIntervalSeconds, notifyPollingIntervalSeconds: pollingIntervalSeconds }, async (jobs: Job<unknown>[]) => {
        for (const job of jobs) await this.handle(name, handler!, job);
        if (worker.id) boss.notifyWorker(worker.id);
      });
    }
  }

  private async handle(name: string, handler: JobHandler<unknown>, job: Job<unknown>): Promise<void> {
    try {
      await handler(job.data, { id: job.id, retryCount: job.retryCount });
    } catch (error) {
      // pg-boss stores what is thrown with the job; keep it to a code, without a stack or message.
      const code = error instanceof JobAttemptFailed ? error.code : 'INTERNAL_ERROR';
      if (!(error instanceof JobAttemptFailed)) this.logger.error({ queue: name, err: error }, 'Job handler failed');
      throw { name: 'JobAttemptFailed', code, message: code };
    }
  }
}

function queueOptions(spec: QueueSpec): QueueOptions & { deadLetter?: string } {
  return {
    retryLimit: spec.retry.limit,
    retryDelay: spec.retry.delaySec,
    retryBackoff: true,
    retryDelayMax: spec.retry.delayMaxSec,
    expireInSeconds: spec.expireInSec,
    // Jobs wait in `retry` for as long as their retries take, and a little more.
    retentionSeconds: Math.max(14 * 24 * 3600, spec.retry.delayMaxSec * (spec.retry.limit + 2)),
    ...(spec.deliveries ? { deadLetter: FAILED_DELIVERIES_QUEUE } : {}),
  };
}

function errorCodeOf(output: object | null): string {
  const code = (output as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code) ? code : 'UNKNOWN';
}

/** A queue of deliveries to people or systems outside (mail, webhooks), retried as DELIVERY_RETRY_* say. */
export function deliveryQueue(name: string, env: { DELIVERY_RETRY_DELAY_SEC: number; DELIVERY_RETRY_DELAY_MAX_SEC: number; DELIVERY_RETRY_LIMIT: number }): QueueSpec {
  return {
    name,
    retry: { delaySec: env.DELIVERY_RETRY_DELAY_SEC, delayMaxSec: env.DELIVERY_RETRY_DELAY_MAX_SEC, limit: env.DELIVERY_RETRY_LIMIT },
    // Longer than any one SMTP conversation or webhook call can take (timeouts of 30 s and 5 s).
    expireInSec: 120,
    deliveries: true,
  };
}
