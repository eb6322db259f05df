import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { maintainPartitions } from '../../../shared/database/range-partitions.js';
import { Sql } from '../../../shared/database/sql.js';
import { DEVICE_OWNERS } from '../../devices/sql-api.js';
import { DeviceLogStore, type LogQuery, type StoredBatch } from '../domain/device-log.store.js';
import type { LogLevel, LogLine, StoredLogLine } from '../domain/device-log.js';

/** Arbitrary constant: the advisory lock that lets one instance at a time maintain the log partitions. */
const PARTITION_LOCK = 7_221_950_005;
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
  return createHash('sha256').update(`${line.level}\u0000${line.tag ?? ''}\u0000${line.message}`).digest().readBigInt64BE(0).toString();
}

/** `text` as an ILIKE pattern that matches it literally anywhere. */
const containing = (text: string): string => `%${text.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;

@Injectable()
export class SqlDeviceLogStore extends DeviceLogStore {
  private readonly logger = new Logger(DeviceLogStore.name);

  constructor(private readonly sql: Sql) {
    super();
  }

  store(deviceId: string, lines: readonly LogLine[], receivedAt: Date, day: string, quotaBytes: number): Promise<StoredBatch | null> {
    return this.sql.transaction(async (tx) => {
      // Takes the day's usage row for this transaction: a device's concurrent batches count one after the other.
      const [usage] = await tx.rows<{ bytes: string }>(
        `INSERT INTO device_log_usage (device_id, day, bytes) VALUES ($1, $2, 0)
         ON CONFLICT (device_id, day) DO UPDATE SET bytes = device_log_usage.bytes RETURNING bytes`,
        [deviceId, day],
        'log-usage-take',
      );
      if (Number(usage.bytes) >= quotaBytes) return null;
      const hashes = lines.map(lineHashOf);
      // What was inserted comes back as (ts, hash) keys, not whole lines: the caller has the lines.
      const [inserted] = await tx.rows<{ keys: string[] | null; bytes: string; owner_id: string | null }>(
        `WITH inserted AS (
           INSERT INTO device_logs (device_id, ts, line_hash, level, tag, message, received_at)
           SELECT $1, l.ts, l.line_hash, l.level, l.tag, l.message, $7
             FROM unnest($2::timestamptz[], $3::bigint[], $4::text[], $5::text[], $6::text[]) AS l(ts, line_hash, level, tag, message)
           ON CONFLICT DO NOTHING
           RETURNING ts, line_hash, octet_length(message) + COALESCE(octet_length(tag), 0) AS bytes)
         SELECT array_agg((extract(epoch FROM ts) * 1000)::bigint::text || ':' || line_hash::text) AS keys, COALESCE(sum(bytes), 0)::bigint AS bytes,
                (SELECT o.owner_id FROM ${DEVICE_OWNERS} o WHERE o.device_id = $1) AS owner_id
           FROM inserted`,
        [deviceId, lines.map((line) => line.ts), hashes, lines.map((line) => line.level), lines.map((line) => line.tag), lines.map((line) => line.message), receivedAt],
        'log-insert',
      );
      const keys = new Set(inserted.keys ?? []);
      if (keys.size > 0) await tx.rows('UPDATE device_log_usage SET bytes = bytes + $3 WHERE device_id = $1 AND day = $2', [deviceId, day, inserted.bytes], 'log-usage-add');
      // A line repeated within the batch is inserted once: the first of its copies is the stored one.
      const taken = new Set<string>();
      const stored = lines.filter((line, index) => {
        const key = `${line.ts.getTime()}:${hashes[index]}`;
        if (!keys.has(key) || taken.has(key)) return false;
        taken.add(key);
        return true;
      });
      return { inserted: stored, duplicates: lines.length - stored.length, ownerId: inserted.owner_id };
    });
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
      const [{ locked }] = await tx.rows<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [PARTITION_LOCK]);
      if (!locked) return { created: [], dropped: [] };
      const cutoff = new Date(now.getTime() - retentionDays * DAY_MS);
      const { created, dropped } = await maintainPartitions(tx, 'device_logs', DAYS, cutoff, new Date(dayStart(now).getTime() + 2 * DAY_MS));
      await tx.rows('DELETE FROM device_log_usage WHERE day < $1::date', [dayStart(cutoff).toISOString().slice(0, 10)]);
      if (created.length > 0 || dropped.length > 0) this.logger.log({ created: created.length, dropped: dropped.length }, 'Device log partitions maintained');
      return { created, dropped };
    });
  }
}
