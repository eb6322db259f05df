import { hash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { ADVISORY_LOCKS } from '../../../shared/database/advisory-locks.js';
import { maintainPartitions } from '../../../shared/database/range-partitions.js';
import { GroupCommit } from '../../../shared/database/group-commit.js';
import { Sql } from '../../../shared/database/sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { DEVICE_OWNERS } from '../../devices/sql-api.js';
import { DeviceLogStore, type LogQuery, type StoredBatch } from '../domain/device-log.store.js';
import type { LogLevel, LogLine, StoredLogLine } from '../domain/device-log.js';

const DAY_MS = 86_400_000;

const dayStart = (at: Date): Date => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));

/** Daily partitions of device_logs. */
const DAYS = { startOf: dayStart, next: (day: Date) => new Date(day.getTime() + DAY_MS), nameOf: (day: Date) => logPartitionName(day) };

export function logPartitionName(day: Date): string {
  const iso = day.toISOString();
  return `device_logs_y${iso.slice(0, 4)}m${iso.slice(5, 7)}d${iso.slice(8, 10)}`;
}

/** A line's identity besides its device and time: 64 bits of SHA-256 over level, tag and message. */
export function lineHashOf(line: Pick<LogLine, 'level' | 'tag' | 'message'>): string {
  return hash('sha256', `${line.level}\u0000${line.tag ?? ''}\u0000${line.message}`, 'buffer').readBigInt64BE(0).toString();
}

/** Takes the usage rows of the (device, day) pairs, given once each and in order, for the transaction; answers their bytes. */
const LOG_USAGE_TAKE_SQL = `INSERT INTO device_log_usage (device_id, day, bytes)
         SELECT u.device_id, u.day, 0 FROM unnest($1::text[], $2::date[]) AS u(device_id, day) ORDER BY u.device_id, u.day
         ON CONFLICT (device_id, day) DO UPDATE SET bytes = device_log_usage.bytes
         RETURNING device_id, to_char(day, 'YYYY-MM-DD') AS day, bytes`;

/**
 * Inserts the lines not stored yet (received at $7, the flush's time); answers, per device with
 * lines inserted, their (ts ms, hash) keys joined by commas and the device's owner.
 */
const LOG_INSERT_SQL = `WITH inserted AS (
           INSERT INTO device_logs (device_id, ts, line_hash, level, tag, message, received_at)
           SELECT l.device_id, l.ts, l.line_hash, l.level, l.tag, l.message, $7
             FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::text[], $5::text[], $6::text[]) AS l(device_id, ts, line_hash, level, tag, message)
           ON CONFLICT DO NOTHING
           RETURNING device_id, ts, line_hash)
         SELECT i.device_id, string_agg((extract(epoch FROM i.ts) * 1000)::bigint::text || ':' || i.line_hash::text, ',') AS keys,
                (SELECT o.owner_id FROM ${DEVICE_OWNERS} o WHERE o.device_id = i.device_id) AS owner_id
           FROM inserted i GROUP BY i.device_id`;

/** Adds the bytes inserted to each (device, day) usage row. */
const LOG_USAGE_ADD_SQL = `UPDATE device_log_usage u SET bytes = u.bytes + a.bytes
           FROM unnest($1::text[], $2::date[], $3::bigint[]) AS a(device_id, day, bytes)
          WHERE u.device_id = a.device_id AND u.day = a.day`;

/** `text` as an ILIKE pattern that matches it literally anywhere. */
const containing = (text: string): string => `%${text.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;

/** One request's batch waiting for its flush. */
interface PendingBatch {
  deviceId: string;
  lines: readonly LogLine[];
  receivedAt: Date;
  day: string;
  quotaBytes: number;
}

/** What a line costs of the quota: the bytes of its message and tag, as PostgreSQL's octet_length counts them. */
const bytesOf = (line: LogLine): number => Buffer.byteLength(line.message) + (line.tag === null ? 0 : Buffer.byteLength(line.tag));
const usageKey = (deviceId: string, day: string) => `${deviceId}\u0000${day}`;

/**
 * device_logs and device_log_usage. Uploads are group-committed (GroupCommit): while a flush runs,
 * the batches that arrive meanwhile wait and go out together in the next one, in one transaction of
 * three statements whatever the number of requests — the (device, day) usage rows taken in one
 * order, every line inserted, the usage added — at most 2,000 lines a flush and three flushes at once.
 *
 * The quota is judged per request, in arrival order: a batch is refused when its device's usage of
 * the day had reached the quota before it, counting the batches ahead of it in the same flush by
 * their whole size (whether their lines turn out duplicates is known only after the insert); a
 * batch that crosses the quota is stored whole. The usage added is what was inserted.
 */
@Injectable()
export class SqlDeviceLogStore extends DeviceLogStore {
  private readonly logger = new Logger(DeviceLogStore.name);
  private readonly flushes = new GroupCommit<PendingBatch, StoredBatch | null>({
    maxSizePerFlush: 2000,
    maxConcurrentFlushes: 3,
    sizeOf: (batch) => batch.lines.length,
    commit: (batches) => this.sql.transaction((tx) => this.commit(tx, batches)),
  });

  constructor(private readonly sql: Sql) {
    super();
  }

  store(deviceId: string, lines: readonly LogLine[], receivedAt: Date, day: string, quotaBytes: number): Promise<StoredBatch | null> {
    return this.flushes.submit({ deviceId, lines, receivedAt, day, quotaBytes });
  }

  private async commit(tx: SqlRunner, batches: PendingBatch[]): Promise<Array<StoredBatch | null>> {
    // The usage rows of the flush, each once (the statement takes them in one order everywhere): a
    // device's batches count one after the other across flushes and instances, and two flushes
    // never deadlock on them.
    const pairs = [...new Map(batches.map((batch) => [usageKey(batch.deviceId, batch.day), batch])).values()];
    const usageRows = await tx.rows<{ device_id: string; day: string; bytes: string }>(
      LOG_USAGE_TAKE_SQL,
      [pairs.map((pair) => pair.deviceId), pairs.map((pair) => pair.day)],
      'log-usage-take',
    );
    const usage = new Map(usageRows.map((row) => [usageKey(row.device_id, row.day), Number(row.bytes)]));
    const admitted = batches.map((batch) => {
      const key = usageKey(batch.deviceId, batch.day);
      const used = usage.get(key) ?? 0;
      if (used >= batch.quotaBytes) return null;
      usage.set(key, used + batch.lines.reduce((sum, line) => sum + bytesOf(line), 0));
      return batch.lines.map(lineHashOf);
    });

    // Times as ISO text: the driver's own conversion of a Date is slower, and these arrays are long.
    const columns = { deviceIds: [] as string[], ts: [] as string[], hashes: [] as string[], levels: [] as string[], tags: [] as Array<string | null>, messages: [] as string[] };
    batches.forEach((batch, index) => {
      const hashes = admitted[index];
      if (!hashes) return;
      batch.lines.forEach((line, at) => {
        columns.deviceIds.push(batch.deviceId);
        columns.ts.push(line.ts.toISOString());
        columns.hashes.push(hashes[at]);
        columns.levels.push(line.level);
        columns.tags.push(line.tag);
        columns.messages.push(line.message);
      });
    });
    if (columns.deviceIds.length === 0) return batches.map(() => null);
    // What was inserted comes back as (ts, hash) keys per device, not whole lines: the caller has the lines.
    const receivedAt = batches[batches.length - 1].receivedAt;
    const insertedRows = await tx.rows<{ device_id: string; keys: string; owner_id: string | null }>(
      LOG_INSERT_SQL,
      [columns.deviceIds, columns.ts, columns.hashes, columns.levels, columns.tags, columns.messages, receivedAt],
      'log-insert',
    );
    const inserted = new Map(insertedRows.map((row) => [row.device_id, { keys: new Set(row.keys.split(',')), ownerId: row.owner_id }]));

    // A line inserted once is claimed by the first batch, in arrival order, that holds it.
    const added = new Map<string, { deviceId: string; day: string; bytes: number }>();
    const results = batches.map((batch, index): StoredBatch | null => {
      const hashes = admitted[index];
      if (!hashes) return null;
      const device = inserted.get(batch.deviceId);
      const stored = batch.lines.filter((line, at) => device?.keys.delete(`${line.ts.getTime()}:${hashes[at]}`) ?? false);
      const bytes = stored.reduce((sum, line) => sum + bytesOf(line), 0);
      if (bytes > 0) {
        const key = usageKey(batch.deviceId, batch.day);
        const entry = added.get(key) ?? { deviceId: batch.deviceId, day: batch.day, bytes: 0 };
        entry.bytes += bytes;
        added.set(key, entry);
      }
      return { inserted: stored, duplicates: batch.lines.length - stored.length, ownerId: device?.ownerId ?? null };
    });
    const usageAdded = [...added.values()];
    if (usageAdded.length > 0) {
      await tx.rows(LOG_USAGE_ADD_SQL, [usageAdded.map((entry) => entry.deviceId), usageAdded.map((entry) => entry.day), usageAdded.map((entry) => entry.bytes)], 'log-usage-add');
    }
    return results;
  }

  async list(deviceId: string, query: LogQuery): Promise<StoredLogLine[]> {
    const rows = await this.sql.rows<{ ts: Date; line_hash: string; level: LogLevel; tag: string | null; message: string }>(
      `SELECT ts, line_hash, level, tag, message FROM device_logs
        WHERE device_id = $1
          AND ($2::timestamptz IS NULL OR ts >= $2) AND ($3::timestamptz IS NULL OR ts >= $3) AND ($4::timestamptz IS NULL OR ts < $4)
          AND ($5::text[] IS NULL OR level = ANY($5))
          AND ($6::text IS NULL OR message ILIKE $6 OR tag ILIKE $6)
          AND ($7::timestamptz IS NULL OR (ts, line_hash) < ($7, $8::bigint))
        ORDER BY ts DESC, line_hash DESC
        LIMIT $9`,
      [deviceId, query.since, query.from, query.to, query.levels, query.text === null ? null : containing(query.text), query.before?.ts ?? null, query.before?.lineHash ?? null, query.limit],
      'log-list',
    );
    return rows.map((row) => ({ ts: row.ts, lineHash: row.line_hash, level: row.level, tag: row.tag, message: row.message }));
  }

  async maintain(now: Date, retentionDays: number): Promise<{ created: string[]; dropped: string[] }> {
    return this.sql.transaction(async (tx) => {
      const [{ locked }] = await tx.rows<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [ADVISORY_LOCKS.deviceLogPartitions]);
      if (!locked) return { created: [], dropped: [] };
      const cutoff = new Date(now.getTime() - retentionDays * DAY_MS);
      const { created, dropped } = await maintainPartitions(tx, 'device_logs', DAYS, cutoff, new Date(dayStart(now).getTime() + 2 * DAY_MS));
      await tx.rows('DELETE FROM device_log_usage WHERE day < $1::date', [dayStart(cutoff).toISOString().slice(0, 10)]);
      if (created.length > 0 || dropped.length > 0) this.logger.log({ created: created.length, dropped: dropped.length }, 'Device log partitions maintained');
      return { created, dropped };
    });
  }
}
