import type { RollupLevel } from '../domain/rollup-levels.js';

/** The table holding a level's slots: telemetry_rollup_5m, _1h, _6h, _1d (one migration each). */
export const rollupTable = (level: RollupLevel): string => `telemetry_rollup_${level.name}`;

const UNITS: Array<[seconds: number, singular: string]> = [
  [86_400, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
  [1, 'second'],
];

/** A level's width as date_bin's stride: '5 minutes', '1 hour', '6 hours', '1 day'. */
export function rollupInterval(level: RollupLevel): string {
  const [seconds, unit] = UNITS.find(([seconds]) => level.widthSec % seconds === 0)!;
  const count = level.widthSec / seconds;
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

export const EPOCH = "TIMESTAMPTZ '1970-01-01 00:00:00+00'";
