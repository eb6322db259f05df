import { endianness } from 'node:os';
import type { SeriesParts } from '../domain/history-series.js';

const LITTLE_ENDIAN = endianness() === 'LE';

/** A row of SERIES_SQL (sql-telemetry-history.queries.ts) as node-pg gives it: each field's column a bytea of big-endian float8s. */
export interface PackedSeriesParts {
  battery_id: string;
  metric: string;
  at: Buffer;
  count: Buffer;
  sum: Buffer;
  min: Buffer;
  max: Buffer;
}

/** A row of SERIES_SQL as the parts bucketsOf merges. */
export function seriesParts(row: PackedSeriesParts): SeriesParts {
  return { battery_id: row.battery_id, metric: row.metric, at: float8s(row.at), count: float8s(row.count), sum: float8s(row.sum), min: float8s(row.min), max: float8s(row.max) };
}

/** float8send's bytes (big-endian), one value after another, as numbers. */
function float8s(bytes: Buffer): Float64Array {
  if (bytes.byteLength % 8 !== 0) throw new RangeError(`a float8 column of ${bytes.byteLength} bytes`);
  const values = new Float64Array(bytes.byteLength / 8);
  const copy = Buffer.from(values.buffer);
  copy.set(bytes);
  if (LITTLE_ENDIAN) copy.swap64();
  return values;
}
