import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options.js';

/** Arbitrary constant: the advisory lock that serialises migrations across instances starting together. */
const MIGRATION_LOCK = 7_221_950_001;

/** Brings the schema up to date. Safe when several instances start at once. */
export async function runMigrations(url: string): Promise<string[]> {
  const dataSource = new DataSource({ ...dataSourceOptions({ url, poolSize: 1 }), migrationsTransactionMode: 'each' });
  await dataSource.initialize();
  try {
    await dataSource.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      const applied = await dataSource.runMigrations();
      return applied.map((migration) => migration.name);
    } finally {
      await dataSource.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await dataSource.destroy();
  }
}
