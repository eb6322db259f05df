import { SchedulerRegistry } from '@nestjs/schedule';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { fileScanner } from '../support/leak-scan.js';
import { expectProblem } from '../support/problems.js';
import { Sql } from '../../src/shared/database/sql.js';
import { DatabaseConnection } from '../../src/shared/database/database-connection.js';
import { eventually } from '../support/eventually.js';
import { stopScheduledWork } from '../../src/shared/scheduled-work.js';

/**
 * Every connection of this instance's pool is in use and none comes free within
 * DATABASE_CONNECT_TIMEOUT_MS: the database is fine, so the 503 says the pool was busy, not that the
 * database is unreachable, and the log says so once, at warn.
 */
describe('the database pool is busy', () => {
  let t: TestApp;
  let device: Registered;

  beforeAll(async () => {
    t = await createTestApp({ DB_POOL_SIZE: '1', DATABASE_CONNECT_TIMEOUT_MS: '200' });
    // The test's own transaction is to be the only user of the one connection: the periodic tasks
    // (one runs every minute) stop, and the start's background work, which may hold the connection
    // for longer than the 200 ms a request waits on a loaded machine, is let finish. No connection
    // in use is the condition, not one idle: a connection left idle for the pool's idle timeout
    // (30 s, reachable on a loaded machine during the start) is closed, and the pool opens one
    // again for the next query, so an empty pool is as free as one with an idle connection.
    await stopScheduledWork(t.app.get(SchedulerRegistry));
    await eventually(() => {
      const usage = t.app.get(DatabaseConnection).poolUsage();
      expect(usage && { inUse: usage.total - usage.idle, waiting: usage.waiting }).toEqual({ inUse: 0, waiting: 0 });
    });
    device = await registerDevice(t.api);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('answers 503 naming the busy pool, logs it once at warn, and serves again once a connection is free', async () => {
    const logStart = fileScanner.logLines().length;
    let release!: () => void;
    const held = new Promise<void>((done) => (release = done));
    // The pool's only connection, held by a transaction that waits.
    const holding = t.app.get(Sql).transaction(() => held);

    const answers = await Promise.all(Array.from({ length: 3 }, () => t.api.GET('/api/v1/device/config', { headers: bearer(device.accessToken) })));
    for (const answer of answers) {
      expectProblem(answer, 503, 'SERVICE_UNAVAILABLE');
      expect((answer.error as { detail?: string }).detail).toBe('Every database connection of this instance is busy. Retry later.');
      expect(answer.response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    }
    release();
    await holding;
    expect((await t.api.GET('/api/v1/device/config', { headers: bearer(device.accessToken) })).response.status).toBe(200);

    const lines = fileScanner.logLines().slice(logStart).map((line) => JSON.parse(line) as { level: number; msg: string; cause?: string });
    expect(lines.filter((line) => line.msg.startsWith('Database')).map((line) => [line.level, line.cause, line.msg])).toEqual([
      [40, 'pool-busy', 'Database pool busy: requests that found no free connection in time get 503'],
    ]);
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
  });
});
