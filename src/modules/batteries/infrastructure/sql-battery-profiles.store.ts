import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { ReplicaSql } from '../../../shared/database/replica-sql.js';
import { TELEMETRY_VIEWS } from '../../telemetry/index.js';
import type { BatteryKey } from '../domain/battery-energy.store.js';
import type { BatteryProfile, Chemistry } from '../domain/battery-profile.js';
import { BatteryProfilesStore, type BatteryOverview, type OutlierMetric } from '../domain/battery-profiles.store.js';
import type { BatteryFigure } from '../domain/outliers.js';
import { IDLE_C_RATE } from '../domain/time-to-empty.js';
interface ProfileRow {
  name: string;
  chemistry: string;
  nominal_voltage: number;
  capacity_ah: number;
  updated_at: Date;
}

const PROFILE_COLUMNS = 'name, chemistry, nominal_voltage, capacity_ah, updated_at';

const toProfile = (row: ProfileRow): BatteryProfile => ({
  name: row.name,
  chemistry: row.chemistry as Chemistry,
  nominalVoltage: row.nominal_voltage,
  capacityAh: row.capacity_ah,
  updatedAt: row.updated_at,
});

interface FigureRow {
  device_id: string;
  battery_id: string;
  chemistry: string;
  capacity_ah: number;
  value: number;
}

/**
 * Each outlier metric as one statement over the profiled batteries ($1: now):
 * - cellImbalance: the newest cellVoltageMax − cellVoltageMin, V;
 * - sohDecline: soh points lost per 30 days, from the first to the last daily average of the last 30 days (two days at least);
 * - selfDischarge: SoC points lost per day while idle: the mean drop between consecutive hours of the
 *   last 7 days whose current stayed within ±capacity × IDLE_C_RATE all hour, × 24.
 */
const FIGURES: Record<OutlierMetric, string> = {
  cellImbalance: `
    SELECT p.device_id, p.battery_id, p.chemistry, p.capacity_ah, hi.value - lo.value AS value
      FROM battery_profiles p
      JOIN ${TELEMETRY_VIEWS.latest} hi ON hi.device_id = p.device_id AND hi.battery_id = p.battery_id AND hi.metric = 'cellVoltageMax'
      JOIN ${TELEMETRY_VIEWS.latest} lo ON lo.device_id = p.device_id AND lo.battery_id = p.battery_id AND lo.metric = 'cellVoltageMin'
     WHERE $1::timestamptz IS NOT NULL`,
  sohDecline: `
    SELECT device_id, battery_id, chemistry, capacity_ah,
           (first_value - last_value) / (EXTRACT(EPOCH FROM last_day - first_day) / 86400) * 30 AS value
      FROM (SELECT p.device_id, p.battery_id, p.chemistry, p.capacity_ah,
                   (array_agg(r.sum / r.count ORDER BY r.bucket))[1] AS first_value, min(r.bucket) AS first_day,
                   (array_agg(r.sum / r.count ORDER BY r.bucket DESC))[1] AS last_value, max(r.bucket) AS last_day
              FROM battery_profiles p
              JOIN ${TELEMETRY_VIEWS.daily} r ON r.device_id = p.device_id AND r.battery_id = p.battery_id AND r.metric = 'soh'
             WHERE r.bucket >= $1::timestamptz - interval '30 days'
             GROUP BY p.device_id, p.battery_id, p.chemistry, p.capacity_ah) AS days
     WHERE last_day > first_day`,
  selfDischarge: `
    WITH idle AS (
      SELECT p.device_id, p.battery_id, p.chemistry, p.capacity_ah, s.bucket, s.sum / s.count AS soc
        FROM battery_profiles p
        JOIN ${TELEMETRY_VIEWS.hourly} c ON c.device_id = p.device_id AND c.battery_id = p.battery_id AND c.metric = 'current'
        JOIN ${TELEMETRY_VIEWS.hourly} s ON s.device_id = c.device_id AND s.battery_id = c.battery_id AND s.bucket = c.bucket AND s.metric = 'soc'
       WHERE c.bucket >= $1::timestamptz - interval '7 days'
         AND c.max <= p.capacity_ah * ${IDLE_C_RATE} AND c.min >= -p.capacity_ah * ${IDLE_C_RATE}
    )
    SELECT a.device_id, a.battery_id, a.chemistry, a.capacity_ah, avg(a.soc - b.soc) * 24 AS value
      FROM idle a JOIN idle b ON b.device_id = a.device_id AND b.battery_id = a.battery_id AND b.bucket = a.bucket + interval '1 hour'
     GROUP BY a.device_id, a.battery_id, a.chemistry, a.capacity_ah`,
};

@Injectable()
export class SqlBatteryProfilesStore extends BatteryProfilesStore {
  constructor(
    private readonly sql: Sql,
    private readonly replica: ReplicaSql,
  ) {
    super();
  }

  async put(battery: BatteryKey, profile: Omit<BatteryProfile, 'updatedAt'>, now: Date): Promise<BatteryProfile> {
    const [row] = await this.sql.rows<ProfileRow>(
      `INSERT INTO battery_profiles (device_id, battery_id, name, chemistry, nominal_voltage, capacity_ah, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (device_id, battery_id) DO UPDATE
         SET name = EXCLUDED.name, chemistry = EXCLUDED.chemistry, nominal_voltage = EXCLUDED.nominal_voltage, capacity_ah = EXCLUDED.capacity_ah, updated_at = EXCLUDED.updated_at
       RETURNING ${PROFILE_COLUMNS}`,
      [battery.deviceId, battery.batteryId, profile.name, profile.chemistry, profile.nominalVoltage, profile.capacityAh, now],
    );
    return toProfile(row!);
  }

  /** Read by every energy and health answer: one named statement instead of TypeORM's query building. */
  async get(battery: BatteryKey): Promise<BatteryProfile | null> {
    const [row] = await this.sql.rows<ProfileRow>(
      'SELECT name, chemistry, nominal_voltage, capacity_ah, updated_at FROM battery_profiles WHERE device_id = $1 AND battery_id = $2',
      [battery.deviceId, battery.batteryId],
      'battery_profile',
    );
    return row ? toProfile(row) : null;
  }

  async overview(deviceId: string): Promise<BatteryOverview[]> {
    const [profiles, latest] = await Promise.all([
      this.sql.rows<ProfileRow & { battery_id: string }>(`SELECT battery_id, ${PROFILE_COLUMNS} FROM battery_profiles WHERE device_id = $1`, [deviceId]),
      this.sql.rows<{ battery_id: string; metric: string; value: number; ts: Date }>(`SELECT battery_id, metric, value, ts FROM ${TELEMETRY_VIEWS.latest} WHERE device_id = $1`, [deviceId]),
    ]);
    const batteries = new Map<string, BatteryOverview>();
    const entry = (batteryId: string) => {
      let found = batteries.get(batteryId);
      if (!found) batteries.set(batteryId, (found = { batteryId, profile: null, latest: {} }));
      return found;
    };
    for (const row of profiles) entry(row.battery_id).profile = toProfile(row);
    for (const row of latest) entry(row.battery_id).latest[row.metric] = { value: row.value, ts: row.ts };
    return [...batteries.values()].sort((a, b) => (a.batteryId < b.batteryId ? -1 : a.batteryId > b.batteryId ? 1 : 0));
  }

  /** Records for health and time to empty: may be a few seconds old (a read replica's when one is close enough). */
  async series(battery: BatteryKey, from: Date, to: Date, names: readonly string[]): Promise<Array<{ ts: number } & Record<string, number>>> {
    const rows = await this.replica.rows<{ ts: Date; values: Record<string, number> }>(
      `SELECT ts, (SELECT jsonb_object_agg(key, value) FROM jsonb_each(metrics) WHERE key = ANY($5::text[])) AS values
         FROM ${TELEMETRY_VIEWS.readings}($1, $2, $3, $4) WHERE metrics ?| $5::text[]
        ORDER BY ts`,
      [battery.deviceId, battery.batteryId, from, to, names],
    );
    return rows.map((row) => ({ ...row.values, ts: row.ts.getTime() }));
  }

  async fleetFigures(metric: OutlierMetric, now: Date): Promise<BatteryFigure[]> {
    const rows = await this.sql.rows<FigureRow>(FIGURES[metric], [now]);
    return rows.map((row) => ({ deviceId: row.device_id, batteryId: row.battery_id, chemistry: row.chemistry, capacityAh: row.capacity_ah, value: row.value }));
  }
}
