/**
 * What other modules' SQL may read of this module's tables: views the migrations define over them
 * (PostgreSQL expands a view into the statement that reads it, so the plans are those of the
 * tables), and one function. Only this module names the tables.
 */
export const TELEMETRY_VIEWS = {
  /**
   * A function: `telemetry_readings(device_id, battery_id or NULL for all, from, to)` answers
   * (battery_id, ts, metrics), the stored records of [from, to), rows and compact days alike
   * (unordered).
   */
  readings: 'telemetry_readings',
  /** (device_id, battery_id, metric, ts, value): the newest value per battery and metric. */
  latest: 'telemetry_latest',
  /** (device_id, battery_id, metric, bucket, count, sum, min, max): the 1-hour rollup. */
  hourly: 'telemetry_hourly',
  /** The same per UTC day: the 1-day rollup. */
  daily: 'telemetry_daily',
} as const;
