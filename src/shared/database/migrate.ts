import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { ADVISORY_LOCKS } from './advisory-locks.js';
import { dataSourceOptions } from './data-source-options.js';

/**
 * DataSource.initialize, leaving nothing open when it fails: TypeORM keeps the pool it opened when
 * a later step of connecting fails, and a caller that tries again would leak one pool per try.
 */
export async function openDataSource(dataSource: DataSource): Promise<void> {
  try {
    await dataSource.initialize();
  } catch (error) {
    const driver = dataSource.driver as PostgresDriver;
    if (!dataSource.isInitialized && driver.master) {
      await (driver.master as Pool).end().catch(() => undefined);
      driver.master = undefined;
    }
    throw error;
  }
}

/**
 * Brings the schema up to date. Safe when several instances start at once: the others wait for
 * the lock (no statement timeout here: a long migration is not a fault).
 */
export async function runMigrations(url: string, connectTimeoutMs?: number): Promise<string[]> {
  const dataSource = new DataSource({ ...dataSourceOptions({ url, poolSize: 1, connectTimeoutMs, statementTimeoutMs: 0 }), migrationsTransactionMode: 'each' });
  await openDataSource(dataSource);
  try {
    await dataSource.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCKS.migrations]);
    try {
      const applied = await dataSource.runMigrations();
      return applied.map((migration) => migration.name);
    } finally {
      await dataSource.query('SELECT pg_advisory_unlock($1)', [ADVISORY_LOCKS.migrations]);
    }
  } finally {
    await dataSource.destroy();
  }
}
