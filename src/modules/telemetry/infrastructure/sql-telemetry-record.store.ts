import { performance } from 'node:perf_hooks';
import { Injectable, Logger, Optional } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { isDatabaseUnavailable } from '../../../shared/database/database-errors.js';
import { Sql } from '../../../shared/database/sql.js';
import { DeviceReturns } from '../domain/device-returns.js';
import type { TelemetryRecord } from '../domain/telemetry-record.js';
import { TelemetryRecordStore } from '../domain/telemetry-record.store.js';
import { IngestMetrics } from '../application/ingest-metrics.js';
import { TelemetryFeed, type StoredTelemetry } from '../application/telemetry-feed.js';
import { INGEST_SQL, INGEST_SQL_WITHOUT_BATTERY_ANALYTICS } from './ingest.sql.js';

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
 * Group commit: while an ingest statement runs, the batches that arrive meanwhile wait and go
 * out together in the next one — one round trip and one commit for many requests, no added delay
 * when the service is idle. Each request is answered after the commit that holds its records.
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
  private readonly queue: Pending[] = [];
  private queuedRecords = 0;
  private running = 0;
  private readonly logger = new Logger(SqlTelemetryRecordStore.name);

  private readonly statement: { text: string; name: string };

  constructor(
    private readonly sql: Sql,
    private readonly feed: TelemetryFeed,
    private readonly metrics: IngestMetrics,
    private readonly returns: DeviceReturns,
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
    let flushed: Flushed;
    try {
      flushed = await this.store(batch);
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
    if (flushed.stillOffline.length > 0) await this.backOnline(flushed.stillOffline, batch[batch.length - 1].now);
    const stored = new Map<string, StoredTelemetry>();
    for (const pending of batch) {
      const records = this.claim(pending, flushed.inserted, stored);
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
   * How many of this request's records were inserted, each added to its device's entry of
   * `stored`; a key counts once, for its first claimant.
   */
  private claim(pending: Pending, inserted: Map<string, InsertedRow>, stored: Map<string, StoredTelemetry>): number {
    const entryOf = (row: InsertedRow): StoredTelemetry => {
      let entry = stored.get(pending.deviceId);
      if (!entry) {
        entry = { deviceId: pending.deviceId, ownerId: row.owner_id, previousNewestTs: new Map(), records: [] };
        stored.set(pending.deviceId, entry);
      }
      return entry;
    };
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
