import { Injectable } from '@nestjs/common';
import type { ConfigOverrides } from '../../devices/domain/device-config.js';
import { Sql } from '../../../shared/database/sql.js';
import type { HistoryRange } from '../../telemetry/domain/history-query.js';

export interface Viewer {
  userId: string;
  isAdmin: boolean;
}

/** Whether a viewer sees a device at all, and from when on its history (a later owner's view starts at their claim). */
export interface DeviceVisibilityRow {
  visible_since: Date | null;
}

export interface DeviceSummaryRow extends DeviceVisibilityRow {
  device_id: string;
  hardware_id: string;
  firmware_version: string;
  owner_id: string | null;
  owner_email: string | null;
  claimed_at: Date | null;
  last_seen_at: Date | null;
  config_overrides: ConfigOverrides;
  config_revision: number;
  applied_config_version: number | null;
  config_applied_at: Date | null;
  latest: Array<{ batteryId: string; metric: string; ts: string; value: number }> | null;
}

/**
 * One series, its points as one JSON array per column, in no particular order but aligned across
 * the columns (ts: bucket start in Unix seconds); the caller orders them.
 */
export interface SeriesRow {
  battery_id: string;
  metric: string;
  ts: number[];
  avg: number[];
  min: number[];
  max: number[];
  count: number[];
}

export interface RawRecordRow {
  battery_id: string;
  ts: Date;
  metrics: Record<string, number>;
}

/** Who sees a device: its owner, or any administrator. */
const VISIBLE = '($2::boolean OR d.owner_id = $3::uuid)';

const SUMMARY_COLUMNS = `
  d.device_id, d.hardware_id, d.firmware_version, d.owner_id, u.email AS owner_email, d.claimed_at, d.last_seen_at, d.visible_since,
  d.config_overrides, d.config_revision, d.applied_config_version, d.config_applied_at,
  (SELECT json_agg(json_build_object('batteryId', l.battery_id, 'metric', l.metric, 'ts', l.ts, 'value', l.value) ORDER BY l.battery_id, l.metric)
     FROM device_latest_metrics l
    WHERE l.device_id = d.device_id AND ($2::boolean OR d.visible_since IS NULL OR l.ts >= d.visible_since)) AS latest`;

/**
 * One rollup level's share of a history query: its span (parameters $outer, $outer + 1) minus the
 * span of the next coarser level ($inner, $inner + 1), as two ranges of one index scan each.
 */
function levelMinusInner(table: string, outer: number, inner: number): string {
  return `SELECT r.battery_id, r.metric, r.bucket, r.count, r.sum, r.min, r.max
           FROM (VALUES ($${outer}::timestamptz, $${inner}::timestamptz), ($${inner + 1}::timestamptz, $${outer + 1}::timestamptz)) AS span (lo, hi)
           JOIN ${table} r ON r.device_id = $1 AND r.bucket >= span.lo AND r.bucket < span.hi
          WHERE ($13::text[] IS NULL OR r.metric = ANY($13)) AND ($14::text IS NULL OR r.battery_id = $14)`;
}

/**
 * The dashboard's read side: response-shaped rows straight from SQL written for each screen.
 * Aggregation runs in PostgreSQL; history is clipped to what the viewer may see.
 */
@Injectable()
export class DashboardQueries {
  constructor(private readonly sql: Sql) {}

  async device(viewer: Viewer, deviceId: string): Promise<DeviceSummaryRow | null> {
    const rows = await this.sql.rows<DeviceSummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM devices d LEFT JOIN users u ON u.id = d.owner_id WHERE d.device_id = $1 AND ${VISIBLE}`,
      [deviceId, viewer.isAdmin, viewer.userId],
      'dashboard_device',
    );
    return rows[0] ?? null;
  }

  /** The visibility check alone, for screens that show no summary (history, configuration): one primary-key read. */
  async visibility(viewer: Viewer, deviceId: string): Promise<DeviceVisibilityRow | null> {
    const rows = await this.sql.rows<DeviceVisibilityRow>(
      `SELECT d.visible_since FROM devices d WHERE d.device_id = $1 AND ${VISIBLE}`,
      [deviceId, viewer.isAdmin, viewer.userId],
      'dashboard_visibility',
    );
    return rows[0] ?? null;
  }

  /** Keyset pagination on deviceId: stable while devices are added. */
  devices(viewer: Viewer, limit: number, after: string | undefined): Promise<DeviceSummaryRow[]> {
    return this.sql.rows<DeviceSummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM devices d LEFT JOIN users u ON u.id = d.owner_id
        WHERE ($1::text IS NULL OR d.device_id > $1) AND ${VISIBLE}
        ORDER BY d.device_id LIMIT $4`,
      [after ?? null, viewer.isAdmin, viewer.userId, limit],
    );
  }

  /**
   * Buckets of [from, to), answered by the coarsest rollup level that is exact for each part (see
   * rollupSpans: `spans` are the 5-minute, hourly, 6-hour and daily spans, nested) and raw records at the
   * edges; the parts are merged per bucket, so the result equals aggregating the raw records.
   * Each series comes back as one row with one JSON array per column: a day of 5-minute points is
   * over a thousand rows, and parsing them row by row in Node cost as much as the query; building a
   * JSON object per point cost PostgreSQL ~1.5 ms more per 24-hour query than five flat arrays.
   * (ts is Unix seconds, formatted by the caller: to_char cost ~3 ms per 1,000 points.) The arrays
   * are not ordered here: ordered aggregates made PostgreSQL sort every bucket row by series and
   * time, a third of the query's time; the caller orders each series' few hundred points. The raw
   * edges are two arms with their bounds as parameters, so the planner prunes the partitions.
   */
  series(query: {
    deviceId: string;
    from: Date;
    to: Date;
    bucketSec: number;
    spans: HistoryRange[];
    metrics: string[] | null;
    batteryId: string | null;
  }): Promise<SeriesRow[]> {
    const [fiveMinutes, hours, sixHours, days] = query.spans;
    return this.sql.rows<SeriesRow>(
      `WITH parts AS (
         SELECT r.battery_id, r.metric, r.bucket AS at, r.count, r.sum, r.min, r.max
           FROM telemetry_rollup_1d r
          WHERE r.device_id = $1 AND r.bucket >= $10 AND r.bucket < $11
            AND ($13::text[] IS NULL OR r.metric = ANY($13)) AND ($14::text IS NULL OR r.battery_id = $14)
         UNION ALL
         ${levelMinusInner('telemetry_rollup_6h', 8, 10)}
         UNION ALL
         ${levelMinusInner('telemetry_rollup_1h', 6, 8)}
         UNION ALL
         ${levelMinusInner('telemetry_rollup_5m', 4, 6)}
         UNION ALL
         SELECT t.battery_id, m.key, t.ts, 1, v.value, v.value, v.value
           FROM telemetry t
           CROSS JOIN LATERAL jsonb_each_text(t.metrics) AS m (key, value)
           CROSS JOIN LATERAL (SELECT m.value::float8 AS value) AS v
          WHERE t.device_id = $1 AND t.ts >= $2 AND t.ts < $4
            AND ($13::text[] IS NULL OR m.key = ANY($13)) AND ($14::text IS NULL OR t.battery_id = $14)
         UNION ALL
         SELECT t.battery_id, m.key, t.ts, 1, v.value, v.value, v.value
           FROM telemetry t
           CROSS JOIN LATERAL jsonb_each_text(t.metrics) AS m (key, value)
           CROSS JOIN LATERAL (SELECT m.value::float8 AS value) AS v
          WHERE t.device_id = $1 AND t.ts >= $5 AND t.ts < $3
            AND ($13::text[] IS NULL OR m.key = ANY($13)) AND ($14::text IS NULL OR t.battery_id = $14)
       ), buckets AS (
         SELECT battery_id, metric, date_bin(make_interval(secs => $12), at, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS bucket,
                sum(sum) / sum(count) AS avg, min(min) AS min, max(max) AS max, sum(count)::int AS count
           FROM parts
          GROUP BY battery_id, metric, 3
       )
       SELECT battery_id, metric,
              json_agg(date_part('epoch', bucket)) AS ts, json_agg(avg) AS avg, json_agg(min) AS min, json_agg(max) AS max, json_agg(count) AS count
         FROM buckets
        GROUP BY battery_id, metric
        ORDER BY metric, battery_id`,
      [
        query.deviceId,
        query.from,
        query.to,
        fiveMinutes.from,
        fiveMinutes.to,
        hours.from,
        hours.to,
        sixHours.from,
        sixHours.to,
        days.from,
        days.to,
        query.bucketSec,
        query.metrics,
        query.batteryId,
      ],
      'dashboard_series',
    );
  }

  /** The records themselves, ascending, keyset-paginated on (ts, batteryId). */
  raw(query: { deviceId: string; from: Date; to: Date; batteryId: string | null; limit: number; after: { ts: Date; batteryId: string } | null }): Promise<RawRecordRow[]> {
    return this.sql.rows<RawRecordRow>(
      `SELECT battery_id, ts, metrics FROM telemetry
        WHERE device_id = $1 AND ts >= $2 AND ts < $3 AND ($4::text IS NULL OR battery_id = $4)
          AND ($5::timestamptz IS NULL OR (ts, battery_id) > ($5, $6::text))
        ORDER BY ts, battery_id LIMIT $7`,
      [query.deviceId, query.from, query.to, query.batteryId, query.after?.ts ?? null, query.after?.batteryId ?? '', query.limit],
    );
  }
}
