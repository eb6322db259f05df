/**
 * The compact layout of settled days (table telemetry_days, migration TelemetryDays1764002700000)
 * as the reading statements name it: the functions that unpack a day row take its columns, not
 * the row, because a whole-row value would decompress every array, the records' too when only the
 * five-minute slots are wanted.
 */
export const COMPACT_DAYS = 'telemetry_days';

/** The five-minute slots of day row `d` within [lo, hi): (metric, bucket, count, sum, min, max). */
export const daySlots = (d: string, lo: string, hi: string): string =>
  `telemetry_day_slots(${d}.day, ${d}.metrics, ${d}.slot_count, ${d}.slot_sum, ${d}.slot_min, ${d}.slot_max, ${lo}, ${hi})`;

/** The values of day row `d` within [lo, hi): (ts, metric, value). */
export const dayValues = (d: string, lo: string, hi: string): string =>
  `telemetry_day_values(${d}.day, ${d}.metrics, ${d}.divisors, ${d}.bases, ${d}.records, ${d}.slots, ${d}.offsets, ${d}.vals, ${lo}, ${hi})`;

/**
 * The records of a device in [from, to), of one battery or (NULL) all, rows and compact days
 * alike: (battery_id, ts, metrics). The one read path of records (history, export, the batteries
 * module through TELEMETRY_VIEWS.readings).
 */
export const readings = (device: string, battery: string, from: string, to: string): string => `telemetry_readings(${device}, ${battery}, ${from}, ${to})`;
