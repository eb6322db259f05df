import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import type { TelemetryRecord } from '../domain/telemetry-record.js';

/**
 * One statement per batch: the records go in through unnest (first stored value wins on
 * (device, battery, ts)), and only the rows actually inserted feed the 5-minute rollup, the latest
 * value per metric and lastSeenAt. A retried batch therefore changes nothing.
 */
const INGEST = `
WITH input AS (
  SELECT * FROM unnest($2::text[], $3::timestamptz[], $4::jsonb[]) AS r (battery_id, ts, metrics)
), inserted AS (
  INSERT INTO telemetry (device_id, battery_id, ts, metrics)
  SELECT $1, battery_id, ts, metrics FROM input
  ON CONFLICT DO NOTHING
  RETURNING battery_id, ts, metrics
), metric_values AS (
  SELECT i.battery_id, m.key AS metric, i.ts, m.value::float8 AS value
  FROM inserted i CROSS JOIN LATERAL jsonb_each_text(i.metrics) AS m (key, value)
), rollup AS (
  INSERT INTO telemetry_rollup_5m AS r (device_id, battery_id, metric, bucket, count, sum, min, max)
  SELECT $1, battery_id, metric, date_bin('5 minutes', ts, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS bucket,
         count(*), sum(value), min(value), max(value)
  FROM metric_values GROUP BY battery_id, metric, bucket ORDER BY bucket, battery_id, metric
  ON CONFLICT (device_id, bucket, battery_id, metric) DO UPDATE
    SET count = r.count + EXCLUDED.count, sum = r.sum + EXCLUDED.sum,
        min = LEAST(r.min, EXCLUDED.min), max = GREATEST(r.max, EXCLUDED.max)
), latest AS (
  INSERT INTO device_latest_metrics AS l (device_id, battery_id, metric, ts, value)
  SELECT DISTINCT ON (battery_id, metric) $1, battery_id, metric, ts, value
  FROM metric_values ORDER BY battery_id, metric, ts DESC
  ON CONFLICT (device_id, battery_id, metric) DO UPDATE SET ts = EXCLUDED.ts, value = EXCLUDED.value WHERE EXCLUDED.ts > l.ts
), seen AS (
  UPDATE devices SET last_seen_at = $5 WHERE device_id = $1
)
SELECT count(*)::int AS inserted FROM inserted`;

@Injectable()
export class TelemetryStore {
  constructor(private readonly sql: Sql) {}

  /** Stores the records and returns how many were new (the rest were already stored). */
  async ingest(deviceId: string, records: TelemetryRecord[], now: Date): Promise<number> {
    const [{ inserted }] = await this.sql.rows<{ inserted: number }>(
      INGEST,
      [deviceId, records.map((record) => record.batteryId), records.map((record) => record.ts), records.map((record) => JSON.stringify(record.metrics)), now],
      'telemetry_ingest',
    );
    return inserted;
  }
}
