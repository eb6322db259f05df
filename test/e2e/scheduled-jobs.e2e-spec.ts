import { Sql } from '../../src/shared/database/sql.js';
import { startTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { createTestDatabase } from '../support/postgres.js';

/** Scheduled jobs run on every instance's schedule; an advisory lock lets one of them do the work. */
describe('Sql.exclusively (advisory lock for scheduled jobs)', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let one: TestApp;
  let two: TestApp;
  const KEY = 424_242;

  beforeAll(async () => {
    database = await createTestDatabase();
    one = await startTestApp(database.url);
    two = await startTestApp(database.url);
  });
  afterAll(async () => {
    await two?.close();
    await one?.close();
    await database?.drop();
  });

  it('while one instance runs the job, the other skips it; afterwards either may run it again', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const runs: string[] = [];

    const first = one.app.get(Sql).exclusively(KEY, async () => {
      runs.push('one');
      await held;
      return 'done';
    });
    await eventually(() => expect(runs).toEqual(['one']));
    const second = await two.app.get(Sql).exclusively(KEY, async () => {
      runs.push('two');
      return 'done';
    });

    expect(second).toBeUndefined();
    release();
    expect(await first).toBe('done');
    expect(await two.app.get(Sql).exclusively(KEY, async () => 'again')).toBe('again');
    expect(runs).toEqual(['one']);
  });
});
