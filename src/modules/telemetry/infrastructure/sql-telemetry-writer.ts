import { performance } from 'node:perf_hooks';
import { Injectable, Optional } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { isDatabaseUnavailable } from '../../../shared/database/database-errors.js';
import { Sql } from '../../../shared/database/sql.js';
import { ROLLUP_LEVELS } from '../domain/rollup-levels.js';
import type { TelemetryRecord } from '../domain/telemetry-record.js';
import { TelemetryWriter } from '../domain/telemetry-writer.js';
import { IngestMetrics } from '../application/ingest-metrics.js';
import { TelemetryFeed, type StoredTelemetry } from '../application/telemetry-feed.js';
import { EPOCH, rollupInterval, rollupTable } from './rollup-levels.sql.js';
import { CHARGE_METRICS, CHARGE_SEGMENT_MINUTES } from '../../../shared/kernel/charge-metrics.js';

/** Adds the batch's sums per finest slot into one rollup level, taking row locks in key order. */
function addToRollup(table: string, width: string): string {
  return `INSERT INTO ${table} AS r (device_id, battery_id, metric, bucket, count, sum, min, max)
  SELECT device_id, battery_id, metric, date_bin('${width}', bucket, ${EPOCH}) AS slot, sum(count), sum(sum), min(min), max(max)
  FROM slots GROUP BY device_id, battery_id, metric, slot ORDER BY device_id, slot, battery_id, metric
  ON CONFLICT (device_id, bucket, battery_id, metric) DO UPDATE
    SET count = r.count + EXCLUDED.count, sum = r.sum + EXCLUDED.sum,
        min = LEAST(r.min, EXCLUDED.min), max = GREATEST(r.max, EXCLUDED.max)`;
}

/** Each rollup level's CTE of the ingest statement, finest first. */
const ADD_TO_ROLLUPS = ROLLUP_LEVELS.map((level) => `), rollup_${level.name} AS (\n  ${addToRollup(rollupTable(level), rollupInterval(level))}\n`).join('');

/**
 * The ingest statement's marks of the hours whose battery energy its records change (energy_stale,
 * below): each hour with records that carry charge, the hour before when one of them lies in its
 * first 15 minutes, the hour after when one lies in its last 15. Grouped by hour first, so a batch
 * costs a row per hour it touches rather than three per record.
 */
const ENERGY_STALE = `), charged_hours AS (
  SELECT device_id, battery_id, date_bin('1 hour', ts, ${EPOCH}) AS hour, min(ts) AS first, max(ts) AS last
  FROM inserted WHERE metrics ?| ARRAY[${CHARGE_METRICS.map((metric) => `'${metric}'`).join(', ')}]
  GROUP BY 1, 2, 3
), energy_stale AS (
  INSERT INTO battery_energy_stale (device_id, battery_id, bucket)
  SELECT DISTINCT device_id, battery_id, bucket FROM (
    SELECT device_id, battery_id, hour AS bucket FROM charged_hours
    UNION ALL
    SELECT device_id, battery_id, hour - interval '1 hour' FROM charged_hours WHERE first < hour + interval '${CHARGE_SEGMENT_MINUTES} minutes'
    UNION ALL
    SELECT device_id, battery_id, hour + interval '1 hour' FROM charged_hours WHERE last >= hour + interval '${60 - CHARGE_SEGMENT_MINUTES} minutes'
  ) AS marks
  ORDER BY 1, 2, 3
  ON CONFLICT (device_id, battery_id, bucket) DO UPDATE SET bucket = EXCLUDED.bucket WHERE false
`;

/**
 * The ingest statement for records of any number of devices: unnest into the partitioned table
 * (first stored value wins on (device, ts, battery)), and only the rows actually inserted feed
 * the rollups (slots of the finest level, summed again into each coarser one), the latest value
 * per metric and lastSeenAt. Locks are taken in a fixed order (ORDER BY) so concurrent writers
 * queue instead of deadlocking.
 * Hand-written SQL, one statement per flush: the ingest hot path measured by S1 and S2 (bench/README.md).
 *
 * `energy_stale` marks, for records that carry charge (CHARGE_METRICS, shared kernel), the UTC hours
 * whose energy they can change: a record changes the segments to its neighbours up to 15 minutes
 * either side, so the hours of ts − 15 min, ts and ts + 15 min (found per hour, ENERGY_STALE). BatteryEnergy recomputes them later
 * from their records; marked in this statement, the mark commits with the records or not at all.
 * An existing mark is locked, not skipped: the row lock keeps a recomputation from taking it (and
 * reading the hour without these records) until they are committed. `DO UPDATE … WHERE false`
 * takes that lock without writing a new version of the row (PostgreSQL locks every conflicting row
 * of ON CONFLICT DO UPDATE, also those its WHERE leaves unchanged). Marks are locked in the
 * order the recomputation takes them (device, battery, hour), so the two cannot deadlock.
 * `seen` is a write to devices outside the devices module, on purpose: a second round trip per
 * flush is what group commit exists to avoid. It follows the rule of every last_seen_at writer,
 * GREATEST: the value only moves forward, so a flush that commits after a later one (up to
 * MAX_CONCURRENT_FLUSHES run at once) cannot take it back. A device the offline check marked
 * offline is back: `seen` clears offline_since and `back_online` records its device.online event in
 * the same statement, answered as one extra row (battery_id NULL) whose listeners dispatch the event.
 * `previous` answers, per battery, the newest record time stored before this statement
 * (device_latest_metrics), which tells the stored-telemetry listeners which records came late
 * (TelemetryFeed). The devices rows are locked in device order (FOR NO KEY UPDATE), so of two
 * flushes for one device only the first still finds it offline, and concurrent flushes never
 * deadlock on them. NO KEY: rows that reference the device (alert series, events) take KEY SHARE
 * locks on it, which must not make ingest wait for their transactions.
 */
function ingestSql(batteryAnalytics: boolean): string {
  return `
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::jsonb[]) AS r (device_id, battery_id, ts, metrics)
), inserted AS (
  INSERT INTO telemetry (device_id, battery_id, ts, metrics)
  SELECT device_id, battery_id, ts, metrics FROM input
  ON CONFLICT DO NOTHING
  RETURNING device_id, battery_id, ts, metrics
${batteryAnalytics ? ENERGY_STALE : ''}), metric_values AS (
  SELECT i.device_id, i.battery_id, m.key AS metric, i.ts, m.value::float8 AS value
  FROM inserted i CROSS JOIN LATERAL jsonb_each_text(i.metrics) AS m (key, value)
), slots AS (
  SELECT device_id, battery_id, metric, date_bin('${rollupInterval(ROLLUP_LEVELS[0])}', ts, ${EPOCH}) AS bucket,
         count(*) AS count, sum(value) AS sum, min(value) AS min, max(value) AS max
  FROM metric_values GROUP BY device_id, battery_id, metric, bucket
${ADD_TO_ROLLUPS}), latest AS (
  INSERT INTO device_latest_metrics AS l (device_id, battery_id, metric, ts, value)
  SELECT DISTINCT ON (device_id, battery_id, metric) device_id, battery_id, metric, ts, value
  FROM metric_values ORDER BY device_id, battery_id, metric, ts DESC
  ON CONFLICT (device_id, battery_id, metric) DO UPDATE SET ts = EXCLUDED.ts, value = EXCLUDED.value WHERE EXCLUDED.ts > l.ts
), previous AS (
  SELECT l.device_id, l.battery_id, max(l.ts) AS ts FROM device_latest_metrics l
  WHERE (l.device_id, l.battery_id) IN (SELECT DISTINCT device_id, battery_id FROM inserted)
  GROUP BY l.device_id, l.battery_id
), seen AS (
  UPDATE devices d SET last_seen_at = GREATEST(d.last_seen_at, $5), last_telemetry_at = GREATEST(d.last_telemetry_at, $5), offline_since = NULL
  FROM (SELECT device_id, offline_since FROM devices WHERE device_id = ANY($1::text[]) ORDER BY device_id FOR NO KEY UPDATE) AS before
  WHERE d.device_id = before.device_id
  RETURNING d.device_id, d.owner_id, before.offline_since
), back_online AS (
  INSERT INTO device_events (type, device_id, owner_id, occurred_at, data)
  SELECT 'device.online', device_id, owner_id, $5,
         jsonb_build_object('offlineSince', to_char(offline_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
  FROM seen WHERE offline_since IS NOT NULL
  RETURNING id, device_id
)
SELECT i.device_id, i.battery_id, i.ts, s.owner_id, p.ts AS previous_newest_ts, NULL::bigint AS online_event_id
  FROM inserted i JOIN seen s ON s.device_id = i.device_id LEFT JOIN previous p ON p.device_id = i.device_id AND p.battery_id = i.battery_id
UNION ALL
SELECT s.device_id, NULL, NULL, s.owner_id, NULL, b.id FROM seen s JOIN back_online b ON b.device_id = s.device_id`;
}

export const INGEST_SQL = ingestSql(true);
/** The ingest statement with BATTERY_ANALYTICS_ENABLED=false: no energy marks. */
export const INGEST_SQL_WITHOUT_BATTERY_ANALYTICS = ingestSql(false);

interface Pending {
  deviceId: string;
  records: TelemetryRecord[];
  now: Date;
  resolve: (inserted: number) => void;
  reject: (error: unknown) => void;
}

/** Records one flush may carry: enough to amortise a commit, small enough to stay quick. */
const MAX_RECORDS_PER_FLUSH = 1000;
/**
 * Flushes running at once. One while load is light, so everything that arrives meanwhile merges
 * into the next; more only while a full flush's worth is waiting (large batches from many
 * gateways), so PostgreSQL works on them with more than one backend instead of one.
 */
const MAX_CONCURRENT_FLUSHES = 3;
const DEADLOCK = '40P01';

/** A row the ingest statement answers: an inserted record, or (battery_id null) a device back online. */
interface InsertedRow {
  device_id: string;
  battery_id: string | null;
  ts: Date | null;
  owner_id: string | null;
  previous_newest_ts: Date | null;
  online_event_id: string | null;
}

const backOnlineKey = (deviceId: string) => `${deviceId}\u0000online`;
const keyOf = (deviceId: string, batteryId: string, ts: Date) => `${deviceId}\u0000${batteryId}\u0000${ts.getTime()}`;

/**
 * Group commit: while an ingest statement runs, the batches that arrive meanwhile wait and go
 * out together in the next one — one round trip and one commit for many requests, no added delay
 * when the service is idle. Each request is answered after the commit that holds its records.
 */
@Injectable()
export class SqlTelemetryWriter extends TelemetryWriter {
  private readonly queue: Pending[] = [];
  private queuedRecords = 0;
  private running = 0;

  private readonly statement: { text: string; name: string };

  constructor(
    private readonly sql: Sql,
    private readonly feed: TelemetryFeed,
    private readonly metrics: IngestMetrics,
    @Optional() env?: Env,
  ) {
    super();
    this.statement =
      env?.BATTERY_ANALYTICS_ENABLED === false
        ? { text: INGEST_SQL_WITHOUT_BATTERY_ANALYTICS, name: 'telemetry_ingest_without_battery_analytics' }
        : { text: INGEST_SQL, name: 'telemetry_ingest' };
  }

  write(deviceId: string, records: TelemetryRecord[], now: Date): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ deviceId, records, now, resolve, reject });
      this.queuedRecords += records.length;
      this.startFlushes();
    });
  }

  private startFlushes(): void {
    while (this.queue.length > 0 && (this.running === 0 || (this.running < MAX_CONCURRENT_FLUSHES && this.queuedRecords >= MAX_RECORDS_PER_FLUSH))) {
      const batch = this.takeBatch();
      this.running += 1;
      void this.flush(batch).finally(() => {
        this.running -= 1;
        this.startFlushes();
      });
    }
  }

  private async flush(batch: Pending[]): Promise<void> {
    try {
      await this.storeIsolating(batch);
    } catch (error) {
      // The database cannot serve: every request of the flush still waiting fails now, none is
      // retried (a settled promise ignores the reject).
      for (const pending of batch) pending.reject(error);
    }
  }

  /**
   * Stores the batch in one statement; when the statement fails for a reason other than
   * unavailability, the fault lies in some request's records (admit should have refused them): the
   * batch is split in halves and each is tried again, down to single requests, so only the guilty
   * request gets the error and every other one is stored. A flush with k guilty requests of n costs
   * at most about 2k·log2(n) more statements. Unavailability is thrown on at once, no retry.
   */
  private async storeIsolating(batch: Pending[]): Promise<void> {
    let inserted: Map<string, InsertedRow>;
    try {
      inserted = await this.store(batch);
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw error;
      if (batch.length === 1) {
        batch[0].reject(error);
        return;
      }
      const middle = Math.ceil(batch.length / 2);
      await this.storeIsolating(batch.slice(0, middle));
      await this.storeIsolating(batch.slice(middle));
      return;
    }
    const stored = new Map<string, StoredTelemetry>();
    for (const pending of batch) {
      const records = this.claim(pending, inserted, stored);
      pending.resolve(records);
    }
    this.feed.publish([...stored.values()]);
  }

  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    let records = 0;
    while (this.queue.length > 0 && (batch.length === 0 || records + this.queue[0].records.length <= MAX_RECORDS_PER_FLUSH)) {
      const next = this.queue.shift()!;
      records += next.records.length;
      this.queuedRecords -= next.records.length;
      batch.push(next);
    }
    return batch;
  }

  private async store(batch: Pending[]): Promise<Map<string, InsertedRow>> {
    const deviceIds: string[] = [];
    const batteryIds: string[] = [];
    const timestamps: Date[] = [];
    const metrics: string[] = [];
    for (const pending of batch) {
      for (const record of pending.records) {
        deviceIds.push(pending.deviceId);
        batteryIds.push(record.batteryId);
        timestamps.push(record.ts);
        metrics.push(JSON.stringify(record.metrics));
      }
    }
    const now = batch[batch.length - 1].now;
    const started = performance.now();
    const run = () => this.sql.rows<InsertedRow>(this.statement.text, [deviceIds, batteryIds, timestamps, metrics, now], this.statement.name);
    // Another flush (of this instance or another) writing the same rows may deadlock with this
    // one; PostgreSQL aborts one side, which then simply runs again.
    const rows = await run().catch((error: unknown) => {
      if ((error as { code?: unknown }).code === DEADLOCK) return run();
      throw error;
    });
    this.metrics.flushed(batch.length, deviceIds.length, (performance.now() - started) / 1000);
    const result = new Map<string, InsertedRow>();
    for (const row of rows) result.set(row.battery_id === null || row.ts === null ? backOnlineKey(row.device_id) : keyOf(row.device_id, row.battery_id, row.ts), row);
    return result;
  }

  /**
   * How many of this request's records were inserted, each added to its device's entry of
   * `stored`; a key counts once, for its first claimant.
   */
  private claim(pending: Pending, inserted: Map<string, InsertedRow>, stored: Map<string, StoredTelemetry>): number {
    const entryOf = (row: InsertedRow): StoredTelemetry => {
      let entry = stored.get(pending.deviceId);
      if (!entry) {
        entry = { deviceId: pending.deviceId, ownerId: row.owner_id, previousNewestTs: new Map(), onlineEventId: null, records: [] };
        stored.set(pending.deviceId, entry);
      }
      return entry;
    };
    const online = inserted.get(backOnlineKey(pending.deviceId));
    if (online) {
      inserted.delete(backOnlineKey(pending.deviceId));
      entryOf(online).onlineEventId = `evt_${online.online_event_id}`;
    }
    let count = 0;
    for (const record of pending.records) {
      const key = keyOf(pending.deviceId, record.batteryId, record.ts);
      const row = inserted.get(key);
      if (!row) continue;
      inserted.delete(key);
      count += 1;
      const entry = entryOf(row);
      entry.records.push(record);
      if (row.previous_newest_ts && !entry.previousNewestTs.has(record.batteryId)) entry.previousNewestTs.set(record.batteryId, row.previous_newest_ts);
    }
    return count;
  }

}
