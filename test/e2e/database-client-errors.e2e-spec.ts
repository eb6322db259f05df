import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';

const POOL_SIZE = 3;

/**
 * A session killed while its client is checked out of the pool (pg-pool takes its own error
 * listener off then) makes the client emit 'error'; heard by nobody, that ends the process. Every
 * client of the pool, the first one TypeORM opens at start among them, listens for its whole life
 * (ListeningClient in data-source-options.ts). An unheard 'error' fails this suite.
 */
describe('database clients whose sessions are killed while checked out', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ DB_POOL_SIZE: String(POOL_SIZE) });
    t.db.on('error', () => undefined);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('every client of the pool, the first one included: the process stays up and the next request is served', async () => {
    const pool = (t.app.get(DataSource).driver as PostgresDriver).master as Pool;
    // The whole pool at once, so the client TypeORM opened at start is among them.
    const clients: PoolClient[] = await Promise.all(Array.from({ length: POOL_SIZE }, () => pool.connect()));
    const pids = await Promise.all(clients.map(async (client) => (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid));
    // 'end', not 'error': a listener of our own would hear the error the test is about.
    const ended = clients.map((client) => new Promise<void>((done) => client.once('end', () => done())));

    const { rows } = await t.db.query<{ killed: boolean }>('SELECT pg_terminate_backend(pid) AS killed FROM unnest($1::int[]) AS pid', [pids]);
    expect(rows.map((row) => row.killed)).toEqual(pids.map(() => true));
    await Promise.all(ended);
    for (const client of clients) client.release(true);

    const { response } = await t.api.GET('/health/ready');
    expect(response.status).toBe(200);
  });
});
