import { performance } from 'node:perf_hooks';
import { Injectable, Logger, Optional } from '@nestjs/common';
import { DEFAULT_SETTLED_HOURS, Env } from '../../../config/env.js';
import { GroupCommit } from '../../../shared/database/group-commit.js';
import { Sql } from '../../../shared/database/sql.js';
import { DeviceReturns } from '../domain/device-returns.js';
import type { TelemetryRecord } from '../domain/telemetry-record.js';
import { TelemetryRecordStore, type WriteResult } from '../domain/telemetry-record.store.js';
import { IngestMetrics } from '../application/ingest-metrics.js';
import { TelemetryFeed, type StoredTelemetry } from '../application/telemetry-feed.js';
import { LOCK_DEVICES_SQL } from './compaction.sql.js';
import { CONFLICTING_SQL, INGEST_SQL, INGEST_SQL_WITHOUT_BATTERY_ANALYTICS, LATE_INGEST_SQL, LATE_INGEST_SQL_WITHOUT_BATTERY_ANALYTICS } from './ingest.sql.js';

interface Pending {
  deviceId: string;
  records: TelemetryRecord[];
  now: Date;
}

const DEADLOCK = '40P01';

/**
 * Records this much younger than the settled window still count as late: compaction and ingest
 * may run on instances whose clocks differ, by less than this.
 */
const LATE_MARGIN_MS = 3_600_000;
const DEADLOCK_TRIES = 4;

async function withDeadlockRetries<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if ((error as { code?: unknown }).code !== DEADLOCK || attempt >= DEADLOCK_TRIES) throw error;
    }
  }
}

/** A row the ingest statement answers: an inserted record, or (battery_id null) a device still marked offline. */
interface InsertedRow {
  device_id: string;
  battery_id: string | null;
  ts: Date | null;
  owner_id: string | null;
  previous_newest_ts: Date | null;
  offline_since: Date | null;
}

const keyOf = (deviceId: string, batteryId: string, ts: Date) => `${deviceId}\u0000${batteryId}\u0000${ts.getTime()}`;

/** What one flush stored: its inserted records by key, and the devices it found marked offline. */
interface Flushed {
  inserted: Map<string, InsertedRow>;
  stillOffline: string[];
}

/**
 * Group commit (GroupCommit): while an ingest statement runs, the batches that arrive meanwhile
 * wait and go out together in the next one, at most 1,000 records a statement and three statements
 * at once; each request is answered after the commit that holds its records.
 *
 * A device the offline check marked offline is back: the statement answers it, and the devices
 * module (DeviceReturns) clears the mark and records device.online before the requests are
 * answered. That is a transaction of its own, after the records' commit, so the common flush stays
 * one statement and one round trip; the event and its dispatch job commit with the change they
 * report (the mark cleared), and if that transaction fails the mark stays, for the device's next
 * upload to find.
 */
@Injectable()
export class SqlTelemetryRecordStore extends TelemetryRecordStore {
  private readonly logger = new Logger(SqlTelemetryRecordStore.name);
  private readonly statement: { text: string; name: string };
  /** For flushes with records a compact day may hold already (LATE_INPUT). */
  private readonly lateStatement: { text: string; name: string };
  private readonly settledMs: number;
  private readonly flushes = new GroupCommit<Pending, WriteResult>({
    maxSizePerFlush: 1000,
    maxConcurrentFlushes: 3,
    sizeOf: (pending) => pending.records.length,
    commit: (batch) => this.commit(batch),
  });

  constructor(
    private readonly sql: Sql,
    private readonly feed: TelemetryFeed,
    private readonly metrics: IngestMetrics,
    private readonly returns: DeviceReturns,
    @Optional() env?: Env,
  ) {
    super();
    const analytics = env?.BATTERY_ANALYTICS_ENABLED !== false;
    this.statement = analytics ? { text: INGEST_SQL, name: 'telemetry_ingest' } : { text: INGEST_SQL_WITHOUT_BATTERY_ANALYTICS, name: 'telemetry_ingest_without_battery_analytics' };
    this.lateStatement = analytics
      ? { text: LATE_INGEST_SQL, name: 'telemetry_ingest_late' }
      : { text: LATE_INGEST_SQL_WITHOUT_BATTERY_ANALYTICS, name: 'telemetry_ingest_late_without_battery_analytics' };
    this.settledMs = (env?.TELEMETRY_SETTLED_HOURS ?? DEFAULT_SETTLED_HOURS) * 3_600_000;
  }

  write(deviceId: string, records: TelemetryRecord[], now: Date): Promise<WriteResult> {
    return this.flushes.submit({ deviceId, records, now });
  }

  /**
   * One flush: its records in one statement, devices back online marked so, the feed told; for
   * each request, how many records were new and which of the others are stored with other metrics
   * (asked only when a flush has records that were not new: retries and clock bugs, not the load).
   */
  private async commit(batch: Pending[]): Promise<WriteResult[]> {
    const flushed = await this.store(batch);
    if (flushed.stillOffline.length > 0) await this.backOnline(flushed.stillOffline, batch[batch.length - 1].now);
    const stored = new Map<string, StoredTelemetry>();
    const notNew = batch.map((pending) => this.claim(pending, flushed.inserted, stored));
    this.feed.publish([...stored.values()]);
    const conflicting = await this.conflicting(batch, notNew);
    return batch.map((pending, index) => ({ inserted: pending.records.length - notNew[index].length, conflicting: conflicting[index] }));
  }

  /** Of each request's records that were not new (positions), those whose stored record has other metrics. */
  private async conflicting(batch: Pending[], notNew: number[][]): Promise<number[][]> {
    const result = batch.map((): number[] => []);
    const asked: Array<{ request: number; position: number }> = [];
    const columns = { deviceIds: [] as string[], batteryIds: [] as string[], ts: [] as Date[], metrics: [] as string[] };
    batch.forEach((pending, request) => {
      for (const position of notNew[request]) {
        const record = pending.records[position];
        asked.push({ request, position });
        columns.deviceIds.push(pending.deviceId);
        columns.batteryIds.push(record.batteryId);
        columns.ts.push(record.ts);
        columns.metrics.push(JSON.stringify(record.metrics));
      }
    });
    if (asked.length === 0) return result;
    const rows = await this.sql.rows<{ n: string }>(CONFLICTING_SQL, [columns.deviceIds, columns.batteryIds, columns.ts, columns.metrics], 'telemetry_conflicting');
    for (const row of rows) {
      const { request, position } = asked[Number(row.n) - 1];
      result[request].push(position);
    }
    for (const positions of result) positions.sort((a, b) => a - b);
    return result;
  }

  private async backOnline(deviceIds: string[], at: Date): Promise<void> {
    try {
      await this.returns.backOnline(deviceIds, at);
    } catch (error) {
      this.logger.warn({ code: (error as { code?: unknown }).code, devices: deviceIds.length }, 'Devices back online not recorded; their next upload tries again');
    }
  }

  private async store(batch: Pending[]): Promise<Flushed> {
    const deviceIds: string[] = [];
    const batteryIds: string[] = [];
    const timestamps: Date[] = [];
    const metrics: string[] = [];
    const now = batch[batch.length - 1].now;
    const lateBefore = now.getTime() - this.settledMs + LATE_MARGIN_MS;
    const lateDevices = new Set<string>();
    for (const pending of batch) {
      for (const record of pending.records) {
        deviceIds.push(pending.deviceId);
        batteryIds.push(record.batteryId);
        timestamps.push(record.ts);
        metrics.push(JSON.stringify(record.metrics));
        if (record.ts.getTime() < lateBefore) lateDevices.add(pending.deviceId);
      }
    }
    const started = performance.now();
    const params = [deviceIds, batteryIds, timestamps, metrics, now];
    // Records older than the settled window may be in a compact day already: such a flush takes
    // the late statement, under the lock its devices' compaction takes.
    const run =
      lateDevices.size === 0
        ? () => this.sql.rows<InsertedRow>(this.statement.text, params, this.statement.name)
        : () =>
            this.sql.transaction(async (tx) => {
              await tx.rows(LOCK_DEVICES_SQL, [[...lateDevices]]);
              return tx.rows<InsertedRow>(this.lateStatement.text, params, this.lateStatement.name);
            });
    // Another flush (of this instance or another) writing the same rows may deadlock with this
    // one; PostgreSQL aborts one side, which then simply runs again. With several flushes side by
    // side the second run can meet a third one, so it gets a few tries before the upload is refused.
    const rows = await withDeadlockRetries(run);
    this.metrics.flushed(batch.length, deviceIds.length, (performance.now() - started) / 1000);
    const flushed: Flushed = { inserted: new Map(), stillOffline: [] };
    for (const row of rows) {
      if (row.battery_id === null || row.ts === null) flushed.stillOffline.push(row.device_id);
      else flushed.inserted.set(keyOf(row.device_id, row.battery_id, row.ts), row);
    }
    return flushed;
  }

  /**
   * This request's records that were inserted are added to its device's entry of `stored` (a key
   * counts once, for its first claimant); answers the positions of those that were not.
   */
  private claim(pending: Pending, inserted: Map<string, InsertedRow>, stored: Map<string, StoredTelemetry>): number[] {
    const entryOf = (row: InsertedRow): StoredTelemetry => {
      let entry = stored.get(pending.deviceId);
      if (!entry) {
        entry = { deviceId: pending.deviceId, ownerId: row.owner_id, previousNewestTs: new Map(), records: [] };
        stored.set(pending.deviceId, entry);
      }
      return entry;
    };
    const notNew: number[] = [];
    for (const [position, record] of pending.records.entries()) {
      const key = keyOf(pending.deviceId, record.batteryId, record.ts);
      const row = inserted.get(key);
      if (!row) {
        notNew.push(position);
        continue;
      }
      inserted.delete(key);
      const entry = entryOf(row);
      entry.records.push(record);
      if (row.previous_newest_ts && !entry.previousNewestTs.has(record.batteryId)) entry.previousNewestTs.set(record.batteryId, row.previous_newest_ts);
    }
    return notNew;
  }
}
