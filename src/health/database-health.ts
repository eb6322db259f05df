import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { DatabaseConnection } from '../shared/database/database-connection.js';
import { Sql } from '../shared/database/sql.js';

/** How long readiness waits for `SELECT 1` before calling the database down. */
const PING_TIMEOUT_MS = 2000;

/** Ready when the database was brought up (migrations, pool, start-up tasks) and answers now. */
@Injectable()
export class DatabaseHealth {
  constructor(
    private readonly indicator: HealthIndicatorService,
    private readonly connection: DatabaseConnection,
    private readonly sql: Sql,
  ) {}

  async check(key: string): Promise<HealthIndicatorResult> {
    const indicator = this.indicator.check(key);
    if (!this.connection.ready) return indicator.down({ reason: 'starting' });
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((done) => (timer = setTimeout(() => done(false), PING_TIMEOUT_MS)));
    try {
      const answered = await Promise.race([this.sql.rows('SELECT 1').then(() => true), timeout]);
      return answered ? indicator.up({ responseTime: Date.now() - started }) : indicator.down({ reason: 'timeout' });
    } catch {
      return indicator.down({ reason: 'unreachable' });
    } finally {
      clearTimeout(timer);
    }
  }
}
