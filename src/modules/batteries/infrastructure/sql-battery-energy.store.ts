import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { ReplicaSql } from '../../../shared/database/replica-sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { BatteryEnergyStore, type BatteryKey, type EnergyBucket, type StaleHours, type StaleScope } from '../domain/battery-energy.store.js';
import { CHARGE_METRICS } from '../../../shared/kernel/charge-metrics.js';
import { TELEMETRY_VIEWS } from '../../telemetry/index.js';
import type { EnergySample } from '../domain/energy.js';

const EPOCH = "TIMESTAMPTZ '1970-01-01 00:00:00+00'";
const HAS_CHARGE = `metrics ?| ARRAY[${CHARGE_METRICS.map((metric) => `'${metric}'`).join(', ')}]`;

interface StaleRow {
  device_id: string;
  battery_id: string;
  buckets: Date[];
}

interface SampleRow {
  ts: Date;
  current: number | null;
  voltage: number | null;
  charged: number | null;
  discharged: number | null;
}

/** A row of sums(), as PostgreSQL answers it (the benchmark's baseline reads the same). */
export interface EnergySumRow {
  start: Date;
  charged_ah: number;
  discharged_ah: number;
  charged_wh: number;
  discharged_wh: number;
  covered_ms: string;
}

/**
 * Hand-written SQL: the stale marks are taken with row locks (FOR UPDATE, SKIP LOCKED for the
 * background recomputation), which TypeORM's query builder would only spell less plainly.
 */
@Injectable()
export class SqlBatteryEnergyStore extends BatteryEnergyStore {
  constructor(
    private readonly sql: Sql,
    private readonly replica: ReplicaSql,
  ) {
    super();
  }

  transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T> {
    return this.sql.transaction(work);
  }

  async takeStale(tx: SqlRunner, limit: number, scope: StaleScope): Promise<StaleHours[]> {
    const rows =
      'deviceId' in scope
      ? await tx.rows<StaleRow>(
          `WITH taken AS (
             DELETE FROM battery_energy_stale WHERE (device_id, battery_id, bucket) IN (
               SELECT device_id, battery_id, bucket FROM battery_energy_stale
                WHERE device_id = $2 AND battery_id = $3 AND bucket >= $4 AND bucket < $5
                ORDER BY bucket LIMIT $1 FOR UPDATE)
             RETURNING device_id, battery_id, bucket)
           SELECT device_id, battery_id, array_agg(bucket ORDER BY bucket) AS buckets FROM taken GROUP BY device_id, battery_id`,
          [limit, scope.deviceId, scope.batteryId, scope.from, scope.to],
        )
      : await tx.rows<StaleRow>(
          `WITH taken AS (
             DELETE FROM battery_energy_stale WHERE (device_id, battery_id, bucket) IN (
               SELECT device_id, battery_id, bucket FROM battery_energy_stale WHERE bucket < $2
                ORDER BY device_id, battery_id, bucket LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING device_id, battery_id, bucket)
           SELECT device_id, battery_id, array_agg(bucket ORDER BY bucket) AS buckets FROM taken GROUP BY device_id, battery_id`,
          [limit, scope.before],
        );
    return rows.map((row) => ({ deviceId: row.device_id, batteryId: row.battery_id, hours: row.buckets.map((bucket) => bucket.getTime()) }));
  }

  async hasStale(battery: BatteryKey, from: Date, to: Date, mayLag = false): Promise<boolean> {
    const [row] = await (mayLag ? this.replica : this.sql).rows<{ stale: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM battery_energy_stale WHERE device_id = $1 AND battery_id = $2 AND bucket >= $3 AND bucket < $4) AS stale',
      [battery.deviceId, battery.batteryId, from, to],
      'battery_energy_has_stale',
    );
    return row.stale;
  }

  async samples(tx: SqlRunner, battery: BatteryKey, from: Date, to: Date, limit: number): Promise<EnergySample[]> {
    const rows = await tx.rows<SampleRow>(
      `SELECT ts, (metrics->>'current')::float8 AS current, (metrics->>'voltage')::float8 AS voltage,
              (metrics->>'chargedAhTotal')::float8 AS charged, (metrics->>'dischargedAhTotal')::float8 AS discharged
         FROM ${TELEMETRY_VIEWS.readings}($1, $2, $3, $4) WHERE ${HAS_CHARGE}
        ORDER BY ts LIMIT $5`,
      [battery.deviceId, battery.batteryId, from, to, limit],
    );
    return rows.map((row) => {
      const sample: EnergySample = { ts: row.ts.getTime() };
      if (row.current !== null) sample.current = row.current;
      if (row.voltage !== null) sample.voltage = row.voltage;
      if (row.charged !== null) sample.chargedAhTotal = row.charged;
      if (row.discharged !== null) sample.dischargedAhTotal = row.discharged;
      return sample;
    });
  }

  async storeHours(tx: SqlRunner, battery: BatteryKey, hours: EnergyBucket[]): Promise<void> {
    const kept = hours.filter((hour) => hour.coveredMs > 0);
    const empty = hours.filter((hour) => hour.coveredMs === 0);
    if (empty.length > 0) {
      await tx.rows('DELETE FROM battery_energy_1h WHERE device_id = $1 AND battery_id = $2 AND bucket = ANY($3::timestamptz[])', [
        battery.deviceId,
        battery.batteryId,
        empty.map((hour) => new Date(hour.start)),
      ]);
    }
    if (kept.length === 0) return;
    await tx.rows(
      `INSERT INTO battery_energy_1h AS e (device_id, battery_id, bucket, charged_ah, discharged_ah, charged_wh, discharged_wh, covered_ms)
       SELECT $1, $2, * FROM unnest($3::timestamptz[], $4::float8[], $5::float8[], $6::float8[], $7::float8[], $8::int[])
       ON CONFLICT (device_id, battery_id, bucket) DO UPDATE SET charged_ah = EXCLUDED.charged_ah, discharged_ah = EXCLUDED.discharged_ah,
         charged_wh = EXCLUDED.charged_wh, discharged_wh = EXCLUDED.discharged_wh, covered_ms = EXCLUDED.covered_ms`,
      [
        battery.deviceId,
        battery.batteryId,
        kept.map((hour) => new Date(hour.start)),
        kept.map((hour) => hour.chargedAh),
        kept.map((hour) => hour.dischargedAh),
        kept.map((hour) => hour.chargedWh),
        kept.map((hour) => hour.dischargedWh),
        kept.map((hour) => Math.round(hour.coveredMs)),
      ],
    );
  }

  async sums(battery: BatteryKey, from: Date, to: Date, bucketSec: number, mayLag = false): Promise<EnergyBucket[]> {
    const rows = await (mayLag ? this.replica : this.sql).rows<EnergySumRow>(
      `SELECT date_bin(make_interval(secs => $5), bucket, ${EPOCH}) AS start, sum(charged_ah) AS charged_ah, sum(discharged_ah) AS discharged_ah,
              sum(charged_wh) AS charged_wh, sum(discharged_wh) AS discharged_wh, sum(covered_ms) AS covered_ms
         FROM battery_energy_1h WHERE device_id = $1 AND battery_id = $2 AND bucket >= $3 AND bucket < $4
        GROUP BY 1 ORDER BY 1`,
      [battery.deviceId, battery.batteryId, from, to, bucketSec],
      'battery_energy_sums',
    );
    return rows.map((row) => ({
      start: row.start.getTime(),
      chargedAh: row.charged_ah,
      dischargedAh: row.discharged_ah,
      chargedWh: row.charged_wh,
      dischargedWh: row.discharged_wh,
      coveredMs: Number(row.covered_ms),
    }));
  }
}
