import { getMetadataArgsStorage } from 'typeorm';
import { ROLLUP_LEVELS } from '../domain/rollup-levels.js';
import { rollupInterval, rollupTable } from './rollup-levels.sql.js';
import { SERIES_SQL } from './sql-telemetry-history.queries.js';
import { INGEST_SQL } from './ingest.sql.js';
import './telemetry.record.js';

describe('SQL generated from the rollup levels', () => {
  it('every level has a record (which the schema drift check holds to the migrations), and every rollup record is a level', () => {
    const rollupTables = getMetadataArgsStorage()
      .tables.map((table) => table.name)
      .filter((name) => name?.startsWith('telemetry_rollup_'));

    expect(rollupTables.sort()).toEqual(ROLLUP_LEVELS.map(rollupTable).sort());
  });

  it('rollupInterval: the width as date_bin takes it', () => {
    expect(ROLLUP_LEVELS.map(rollupInterval)).toEqual(['5 minutes', '1 hour', '6 hours', '1 day']);
    expect(rollupInterval({ name: '15m', widthSec: 900 })).toBe('15 minutes');
    expect(rollupInterval({ name: '2d', widthSec: 172_800 })).toBe('2 days');
  });

  it('the ingest statement adds into every level, each binned at its own width', () => {
    for (const level of ROLLUP_LEVELS) {
      expect(INGEST_SQL).toContain(`), rollup_${level.name} AS (\n  INSERT INTO ${rollupTable(level)} AS r`);
      expect(INGEST_SQL).toContain(`date_bin('${rollupInterval(level)}', bucket,`);
    }
    expect(INGEST_SQL.match(/INSERT INTO telemetry_rollup_/g)).toHaveLength(ROLLUP_LEVELS.length);
  });

  it('the series statement reads every level once, its parameters numbered without a gap', () => {
    for (const level of ROLLUP_LEVELS) expect(SERIES_SQL.split(` ${rollupTable(level)} r`)).toHaveLength(2);
    const numbers = new Set([...SERIES_SQL.matchAll(/\$(\d+)/g)].map((match) => Number(match[1])));
    // Device, from, to; two per level; the metrics and battery filters (buckets are merged by the caller).
    const expected = 3 + 2 * ROLLUP_LEVELS.length + 2;
    expect([...numbers].sort((a, b) => a - b)).toEqual(Array.from({ length: expected }, (_, i) => i + 1));
  });
});
