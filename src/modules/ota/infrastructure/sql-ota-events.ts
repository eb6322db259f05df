import { Injectable } from '@nestjs/common';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import type { ReleaseState } from '../domain/firmware-release.js';
import type { OtaEvent, OtaEventType } from '../domain/ota-event.js';

export interface StoredOtaEvent extends OtaEvent {
  id: string;
  receivedAt: Date;
}

interface EventRow {
  id: string;
  ts: Date;
  type: OtaEventType;
  from_version: string | null;
  to_version: string | null;
  progress_pct: number | null;
  error_code: string | null;
  message: string | null;
  received_at: Date;
}

/** One device's move with one release, from the latest event about it in a batch. */
export interface ReleaseStateChange {
  releaseId: string;
  state: ReleaseState;
  eventTs: Date;
}

export interface HistoryFilter {
  deviceId: string;
  from: Date | null;
  to: Date | null;
  types: OtaEventType[] | null;
  limit: number;
  before: { ts: Date; id: string } | null;
}

/** OTA runtime events and the per-release state they drive, written in one transaction per batch. */
@Injectable()
export class SqlOtaEvents {
  constructor(private readonly sql: Sql) {}

  transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T> {
    return this.sql.transaction(work);
  }

  /** Locks the device row: one batch of a device at a time. Null when the device is gone. */
  async lockDevice(tx: SqlRunner, deviceId: string): Promise<{ firmwareReportedAt: Date | null } | null> {
    const [row] = await tx.rows<{ firmware_reported_at: Date | null }>('SELECT firmware_reported_at FROM devices WHERE device_id = $1 FOR UPDATE', [deviceId]);
    return row ? { firmwareReportedAt: row.firmware_reported_at } : null;
  }

  /** Stored download_progress times per toVersion within [from, to], for coalescing. */
  async storedProgress(tx: SqlRunner, deviceId: string, toVersions: string[], from: Date, to: Date): Promise<Map<string, Date[]>> {
    const rows = await tx.rows<{ to_version: string; ts: Date }>(
      `SELECT to_version, ts FROM ota_events
        WHERE device_id = $1 AND type = 'download_progress' AND to_version = ANY($2::text[]) AND ts BETWEEN $3 AND $4`,
      [deviceId, toVersions, from, to],
    );
    const byVersion = new Map<string, Date[]>();
    for (const row of rows) byVersion.set(row.to_version, [...(byVersion.get(row.to_version) ?? []), row.ts]);
    return byVersion;
  }

  /** One multi-row INSERT; returns how many were new (the rest were stored before). */
  async insert(tx: SqlRunner, deviceId: string, events: OtaEvent[], receivedAt: Date): Promise<number> {
    if (events.length === 0) return 0;
    const rows = await tx.rows(
      `INSERT INTO ota_events (device_id, ts, type, from_version, to_version, progress_pct, error_code, message, received_at)
       SELECT $1, e.ts, e.type, e.from_version, e.to_version, e.progress_pct, e.error_code, e.message, $9
         FROM unnest($2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::text[], $8::text[])
           AS e (ts, type, from_version, to_version, progress_pct, error_code, message)
       ON CONFLICT (device_id, ts, type) DO NOTHING
       RETURNING id`,
      [
        deviceId,
        events.map((e) => e.ts),
        events.map((e) => e.type),
        events.map((e) => e.fromVersion),
        events.map((e) => e.toVersion),
        events.map((e) => e.progressPct),
        events.map((e) => e.errorCode),
        events.map((e) => e.message),
        receivedAt,
      ],
      'ota_events_insert',
    );
    return rows.length;
  }

  /** Later events win: a retried or late batch never moves a device back. */
  async applyStates(tx: SqlRunner, deviceId: string, changes: ReleaseStateChange[], receivedAt: Date): Promise<void> {
    if (changes.length === 0) return;
    await tx.rows(
      `INSERT INTO device_release_states (device_id, release_id, state, offered_at, last_event_ts, last_event_at)
       SELECT $1, c.release_id, c.state, NULL, c.ts, $5 FROM unnest($2::uuid[], $3::text[], $4::timestamptz[]) AS c (release_id, state, ts)
       ON CONFLICT (release_id, device_id) DO UPDATE
         SET state = EXCLUDED.state, last_event_ts = EXCLUDED.last_event_ts, last_event_at = EXCLUDED.last_event_at
         WHERE device_release_states.last_event_ts IS NULL OR device_release_states.last_event_ts <= EXCLUDED.last_event_ts`,
      [deviceId, changes.map((c) => c.releaseId), changes.map((c) => c.state), changes.map((c) => c.eventTs), receivedAt],
    );
  }

  async setFirmwareVersion(tx: SqlRunner, deviceId: string, version: string, reportedAt: Date): Promise<void> {
    await tx.rows('UPDATE devices SET firmware_version = $2, firmware_reported_at = $3 WHERE device_id = $1', [deviceId, version, reportedAt]);
  }

  async touchLastSeen(tx: SqlRunner, deviceId: string, now: Date): Promise<void> {
    await tx.rows('UPDATE devices SET last_seen_at = GREATEST(last_seen_at, $2) WHERE device_id = $1', [deviceId, now]);
  }

  /** Newest first on (ts, id): new events never shift a page that was already read. */
  async history(filter: HistoryFilter): Promise<StoredOtaEvent[]> {
    const rows = await this.sql.rows<EventRow>(
      `SELECT id, ts, type, from_version, to_version, progress_pct, error_code, message, received_at
         FROM ota_events
        WHERE device_id = $1
          AND ($2::timestamptz IS NULL OR ts >= $2)
          AND ($3::timestamptz IS NULL OR ts < $3)
          AND ($4::text[] IS NULL OR type = ANY($4))
          AND ($5::timestamptz IS NULL OR (ts, id) < ($5, $6::bigint))
        ORDER BY ts DESC, id DESC
        LIMIT $7`,
      [filter.deviceId, filter.from, filter.to, filter.types, filter.before?.ts ?? null, filter.before?.id ?? null, filter.limit],
    );
    return rows.map((row) => ({
      id: String(row.id),
      ts: row.ts,
      type: row.type,
      fromVersion: row.from_version,
      toVersion: row.to_version,
      progressPct: row.progress_pct,
      errorCode: row.error_code,
      message: row.message,
      receivedAt: row.received_at,
    }));
  }
}
