import { ROLLUP_LEVELS } from './rollup-levels.js';

const UNIT_SEC: Record<string, number> = { m: 60, h: 3600, d: 86_400 };

describe('ROLLUP_LEVELS', () => {
  it('finest first, each width dividing the next one and a day (retention cuts rollups at UTC midnights)', () => {
    for (const [i, level] of ROLLUP_LEVELS.entries()) {
      expect(86_400 % level.widthSec).toBe(0);
      if (i > 0) {
        expect(level.widthSec).toBeGreaterThan(ROLLUP_LEVELS[i - 1].widthSec);
        expect(level.widthSec % ROLLUP_LEVELS[i - 1].widthSec).toBe(0);
      }
    }
  });

  it('each name says its width (it names the table: telemetry_rollup_<name>)', () => {
    for (const level of ROLLUP_LEVELS) {
      const [, count, unit] = /^(\d+)([mhd])$/.exec(level.name) ?? [];
      expect(Number(count) * UNIT_SEC[unit]).toBe(level.widthSec);
    }
  });
});
