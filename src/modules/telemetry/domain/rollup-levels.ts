export interface RollupLevel {
  /** Names the level's table, telemetry_rollup_<name>. */
  readonly name: string;
  readonly widthSec: number;
}

/**
 * The rollup levels, finest first: the one list the ingest statement, retention and the history
 * query are generated from. Each width divides the next and a day (retention drops slots below a
 * month start, a UTC midnight); slots are aligned to the Unix epoch. A new level also needs a
 * migration creating its table (telemetry_rollup_<name>) and backfilling it.
 */
export const ROLLUP_LEVELS: readonly RollupLevel[] = [
  { name: '5m', widthSec: 300 },
  { name: '1h', widthSec: 3600 },
  { name: '6h', widthSec: 21_600 },
  { name: '1d', widthSec: 86_400 },
];
