import pg from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions, MIGRATIONS } from '../../src/shared/database/data-source-options.js';
import { TelemetryRollupLevels1763780000000 } from '../../src/shared/database/migrations/1763780000000-telemetry-rollup-levels.js';
import { runMigrations } from '../../src/shared/database/migrate.js';
import { createTestDatabase, endPool } from '../support/postgres.js';

/**
 * A database that already holds 5-minute rollups when the hourly, daily and 6-hour levels arrive:
 * the migrations sum the existing slots into them, so trends stay exact across the upgrade.
 */
describe('migrations TelemetryRollupLevels and TelemetryRollup6h: existing 5-minute rollups fill the new levels', () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: pg.Pool;

  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
    const before = new DataSource({ ...dataSourceOptions({ url: database.url, poolSize: 1 }), migrations: MIGRATIONS.slice(0, MIGRATIONS.indexOf(TelemetryRollupLevels1763780000000)) });
    await before.initialize();
    await before.runMigrations();
    await before.destroy();
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    const slots: Array<[string, string, string, number, number, number, number]> = [
      ['2026-11-19T23:55:00Z', 'main', 'voltage', 30, 1500, 49, 51],
      ['2026-11-20T00:00:00Z', 'main', 'voltage', 30, 1560, 50, 53],
      ['2026-11-20T00:55:00Z', 'main', 'voltage', 10, 480, 47, 49],
      ['2026-11-20T01:00:00Z', 'main', 'voltage', 5, 250, 50, 50],
      ['2026-11-20T00:05:00Z', 'pack-2', 'soc', 3, 270, 89, 91],
    ];
    for (const [bucket, battery, metric, count, sum, min, max] of slots) {
      await db.query('INSERT INTO telemetry_rollup_5m (device_id, battery_id, metric, bucket, count, sum, min, max) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
        'gw-1',
        battery,
        metric,
        bucket,
        count,
        sum,
        min,
        max,
      ]);
    }

    // Migrations added later run too; these two are the subject here.
    expect((await runMigrations(database.url)).slice(0, 2)).toEqual(['TelemetryRollupLevels1763780000000', 'TelemetryRollup6h1763790000000']);
  });
  afterAll(async () => {
    await endPool(db);
    await database.drop();
  });

  const rows = async (table: string) =>
    (await db.query(`SELECT battery_id, metric, bucket, count, sum, min, max FROM ${table} ORDER BY bucket, battery_id, metric`)).rows.map((row) => ({
      ...row,
      bucket: (row.bucket as Date).toISOString(),
    }));

  it('hours: the slots of each hour summed', async () => {
    expect(await rows('telemetry_rollup_1h')).toEqual([
      { battery_id: 'main', metric: 'voltage', bucket: '2026-11-19T23:00:00.000Z', count: 30, sum: 1500, min: 49, max: 51 },
      { battery_id: 'main', metric: 'voltage', bucket: '2026-11-20T00:00:00.000Z', count: 40, sum: 2040, min: 47, max: 53 },
      { battery_id: 'pack-2', metric: 'soc', bucket: '2026-11-20T00:00:00.000Z', count: 3, sum: 270, min: 89, max: 91 },
      { battery_id: 'main', metric: 'voltage', bucket: '2026-11-20T01:00:00.000Z', count: 5, sum: 250, min: 50, max: 50 },
    ]);
  });

  it('6 hours: the slots of each quarter of a UTC day summed', async () => {
    expect(await rows('telemetry_rollup_6h')).toEqual([
      { battery_id: 'main', metric: 'voltage', bucket: '2026-11-19T18:00:00.000Z', count: 30, sum: 1500, min: 49, max: 51 },
      { battery_id: 'main', metric: 'voltage', bucket: '2026-11-20T00:00:00.000Z', count: 45, sum: 2290, min: 47, max: 53 },
      { battery_id: 'pack-2', metric: 'soc', bucket: '2026-11-20T00:00:00.000Z', count: 3, sum: 270, min: 89, max: 91 },
    ]);
  });

  it('days: the slots of each UTC day summed', async () => {
    expect(await rows('telemetry_rollup_1d')).toEqual([
      { battery_id: 'main', metric: 'voltage', bucket: '2026-11-19T00:00:00.000Z', count: 30, sum: 1500, min: 49, max: 51 },
      { battery_id: 'main', metric: 'voltage', bucket: '2026-11-20T00:00:00.000Z', count: 45, sum: 2290, min: 47, max: 53 },
      { battery_id: 'pack-2', metric: 'soc', bucket: '2026-11-20T00:00:00.000Z', count: 3, sum: 270, min: 89, max: 91 },
    ]);
  });
});
