/**
 * The compact layout of settled days as the reading statements name it (migrations
 * TelemetryDays1764002700000 and TelemetryHours1764002800000): a day's five-minute rollup in one
 * row per battery (`telemetry_days`), its records in one row per battery and hour
 * (`telemetry_hours`), so a read of a few minutes unpacks an hour's values, not a day's. The
 * functions that unpack a row take its columns, not the row, because a whole-row value would
 * decompress every array.
 */
export const COMPACT_DAYS = 'telemetry_days';
export const COMPACT_HOURS = 'telemetry_hours';

/** The five-minute slots of day row `d` within [lo, hi): (metric, bucket, count, sum, min, max). */
export const daySlots = (d: string, lo: string, hi: string): string =>
  `telemetry_day_slots(${d}.day, ${d}.metrics, ${d}.slot_count, ${d}.slot_sum, ${d}.slot_min, ${d}.slot_max, ${lo}, ${hi})`;

/** The values of hour row `h` within [lo, hi): (ts, metric, value). */
export const hourValues = (h: string, lo: string, hi: string): string =>
  `telemetry_hour_values(${h}.hour, ${h}.metrics, ${h}.divisors, ${h}.bases, ${h}.records, ${h}.slots, ${h}.offsets, ${h}.vals, ${lo}, ${hi})`;

/** The hour rows of device `device` that may hold records of [from, to) (alias `h`). */
export const hoursMeeting = (device: string, from: string, to: string): string =>
  `h.device_id = ${device} AND h.hour > ${from}::timestamptz - interval '1 hour' AND h.hour < ${to}`;

/**
 * The records of a device in [from, to), of one battery or (NULL) all, rows and compact hours
 * alike: (battery_id, ts, metrics). The one read path of records (history, export, the batteries
 * module through TELEMETRY_VIEWS.readings).
 */
export const readings = (device: string, battery: string, from: string, to: string): string => `telemetry_readings(${device}, ${battery}, ${from}, ${to})`;
