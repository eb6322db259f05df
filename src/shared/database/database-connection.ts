import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import type { DatabaseSettings } from './data-source-options.js';
import { asDatabaseError, DatabaseUnavailableError, isDatabaseUnavailable } from './database-errors.js';
import type { DatabaseOutage } from './database-outage.js';
import { openDataSource, runMigrations } from './migrate.js';

/** The pool's connections at one moment: opened in all, of them idle, and requests waiting for one. */
export interface PoolUsage {
  total: number;
  idle: number;
  waiting: number;
}

interface StartupTask {
  name: string;
  run: () => Promise<unknown>;
}

/** Waits between attempts to reach the database: quick at first, then every few seconds. */
const RETRY_DELAYS_MS = [250, 500, 1000, 2000, 3000];

/** Only the driver's code and message: a QueryFailedError also carries the SQL and its parameters. */
function summary(error: unknown): { code?: unknown; error: string } {
  const { code, message } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; message?: unknown };
  return { code, error: typeof message === 'string' ? message : String(error) };
}

/**
 * Brings the database up for the service: migrations (under their advisory lock), the pool, then
 * the start-up tasks modules registered (partitions, the configured administrator).
 *
 * The service does not need PostgreSQL to start. When it answers at start, all of this happens
 * before the application finishes initialising, as it always did. When it does not (unreachable,
 * refusing, still starting), the service starts anyway — requests that need the database get 503
 * from Sql, readiness says not ready — and keeps trying in the background until it succeeds.
 * Once the pool is open, pg replaces connections that break, so a later outage needs nothing here.
 */
export class DatabaseConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private readonly pending: StartupTask[] = [];
  private retryTimer: NodeJS.Timeout | null = null;
  private attempt: Promise<void> | null = null;
  private failures = 0;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly settings: DatabaseSettings,
    private readonly outage: DatabaseOutage,
  ) {}

  /** Schema migrated, pool open and every start-up task done. */
  get ready(): boolean {
    return this.dataSource.isInitialized && this.pending.length === 0;
  }

  /** The pool TypeORM opened, as it is now; null while it is not open. */
  poolUsage(): PoolUsage | null {
    if (!this.dataSource.isInitialized) return null;
    const pool = (this.dataSource.driver as PostgresDriver).master as Pool;
    return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
  }

  async onModuleInit(): Promise<void> {
    try {
      await this.bringUp();
    } catch (error) {
      // Anything but unavailability (bad credentials, a failing migration) stops the start, as before.
      if (!isDatabaseUnavailable(error)) throw error;
      this.refused(error);
      this.scheduleRetry();
    }
  }

  /**
   * Runs `task` once the database is up: now, awaited, when it is; otherwise after it comes up, in
   * the background, before readiness turns true. Tasks must be safe to run again after a failure.
   */
  async atStartup(name: string, run: () => Promise<unknown>): Promise<void> {
    const task = { name, run };
    if (this.dataSource.isInitialized && this.pending.length === 0) {
      try {
        await run();
        return;
      } catch (error) {
        if (!isDatabaseUnavailable(error)) throw error;
        this.refused(error);
      }
    }
    this.pending.push(task);
    this.scheduleRetry();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.attempt?.catch(() => undefined);
    this.outage.stop();
    // An attempt that finished after TypeORM closed its data source must not leave the pool open.
    if (this.dataSource.isInitialized) await this.dataSource.destroy().catch(() => undefined);
  }

  private async bringUp(): Promise<void> {
    if (!this.dataSource.isInitialized) {
      const applied = await runMigrations(this.settings.url, this.settings.connectTimeoutMs);
      if (applied.length > 0) this.logger.log({ migrations: applied }, 'Applied migrations');
      if (this.stopped) return;
      // Every client of the pool hears its own errors (ListeningClient, data-source-options.ts).
      await openDataSource(this.dataSource);
      // A new connection is the sign that an unreachable database is back (DatabaseOutage).
      ((this.dataSource.driver as PostgresDriver).master as Pool).on('connect', () => this.outage.connected());
      this.outage.connected();
    }
    while (this.pending.length > 0 && !this.stopped) {
      await this.pending[0].run();
      this.pending.shift();
    }
  }

  /**
   * For errors from outside the pool (the job queue's own connections): unavailability goes to the
   * outage log, once per outage; returns false for any other error, which the caller logs.
   */
  reportUnavailable(error: unknown): boolean {
    if (!isDatabaseUnavailable(error)) return false;
    this.refused(error);
    return true;
  }

  private refused(error: unknown): void {
    const unavailable = asDatabaseError(error) as DatabaseUnavailableError;
    this.outage.refused(unavailable.unavailableCause, unavailable.reason);
  }

  private scheduleRetry(): void {
    if (this.stopped || this.retryTimer || this.attempt) return;
    const delay = RETRY_DELAYS_MS[Math.min(this.failures, RETRY_DELAYS_MS.length - 1)];
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.attempt = this.bringUp()
        .then(() => {
          if (!this.stopped) this.logger.log('Database available; the service is ready');
          this.failures = 0;
        })
        .catch((error: unknown) => {
          this.failures += 1;
          const details = { attempt: this.failures, ...summary(error) };
          // Unavailability is logged once per outage (DatabaseOutage); each attempt only at debug.
          if (isDatabaseUnavailable(error)) {
            this.refused(error);
            this.logger.debug(details, 'Database still unavailable');
          } else this.logger.error(details, 'Bringing the database up failed');
        })
        .finally(() => {
          this.attempt = null;
          if (!this.ready) this.scheduleRetry();
        });
    }, delay);
    this.retryTimer.unref();
  }
}
