import { randomBytes } from 'node:crypto';
import pg from 'pg';

function adminUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: the Jest global setup should have started PostgreSQL');
  return url;
}

function migratedTemplate(): string {
  const name = process.env.TEST_TEMPLATE_DATABASE;
  if (!name) throw new Error('TEST_TEMPLATE_DATABASE is not set: the Jest global setup should have created the migrated template');
  return name;
}

export interface TestDatabaseOptions {
  /** No schema at all, for tests of the migrations themselves; by default a copy of the run's migrated template. */
  empty?: boolean;
}

/**
 * A database of its own on the test server, so files run in parallel: a copy of the template the
 * global setup migrated (copying is far cheaper than migrating), or an empty one when asked.
 */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `dcs_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(options.empty ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${migratedTemplate()}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl() });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Ends a pool of a test's own before its database is dropped. pg-pool's end() resolves once it has
 * asked its idle clients to end, before their sessions are gone; the DROP … WITH (FORCE) that follows
 * can still terminate one, whose error the pool would emit with no one listening (an unhandled error
 * that fails whichever test is running). Errors of a pool that is closing are of no interest.
 */
export async function endPool(pool: pg.Pool | undefined): Promise<void> {
  if (!pool) return;
  pool.on('error', () => undefined);
  await pool.end();
}
