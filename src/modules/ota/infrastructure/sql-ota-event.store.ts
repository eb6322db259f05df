import { Injectable } from '@nestjs/common';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import { DeviceReports } from '../../devices/index.js';
import type { OtaEvent, OtaEventType } from '../domain/ota-event.js';
import { OtaEventStore, type HistoryFilter, type OtaEventBatch, type ReleaseStateChange, type StoredOtaEvent } from '../domain/ota-event.store.js';

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

/**
 * OTA runtime events and the per-release state they drive, written in one transaction per batch.
 * SQL because this is device-facing ingest written like the telemetry ingest measured in
 * bench/README.md (S1/S2): one multi-row INSERT from unnest and a conditional upsert (later events
 * win), neither of which TypeORM's query builder can express.
 *
 * The batch locks the device's row and moves its firmware version and last_seen_at through the
 * devices module's DeviceReports, in the same transaction as the events that report them, so a
 * retried, late or concurrent batch can neither lose nor reorder a report. Tested in
 * test/e2e/ota-events.e2e-spec.ts.
 */
@Injectable()
export class SqlOtaEventStore extends OtaEventStore {
  constructor(
    private readonly sql: Sql,
    private readonly devices: DeviceReports,
  ) {
    super();
  }

  inBatch<T>(deviceId: string, work: (batch: OtaEventBatch) => Promise<T>): Promise<T | null> {
    return this.sql.transaction(async (tx) => {
      const device = await this.devices.lock(tx, deviceId);
      return device ? work(new SqlOtaEventBatch(tx, deviceId, device.firmwareReportedAt, device.ownerId, this.devices)) : null;
    });
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

class SqlOtaEventBatch implements OtaEventBatch {
  constructor(
    readonly tx: SqlRunner,
    private readonly deviceId: string,
    readonly firmwareReportedAt: Date | null,
    readonly ownerId: string | null,
    private readonly devices: DeviceReports,
  ) {}

  async storedProgress(toVersions: string[], from: Date, to: Date): Promise<Map<string, Date[]>> {
    const rows = await this.tx.rows<{ to_version: string; ts: Date }>(
      `SELECT to_version, ts FROM ota_events
        WHERE device_id = $1 AND type = 'download_progress' AND to_version = ANY($2::text[]) AND ts BETWEEN $3 AND $4`,
      [this.deviceId, toVersions, from, to],
    );
    const byVersion = new Map<string, Date[]>();
    for (const row of rows) byVersion.set(row.to_version, [...(byVersion.get(row.to_version) ?? []), row.ts]);
    return byVersion;
  }

  async insert(events: OtaEvent[], receivedAt: Date): Promise<OtaEvent[]> {
    if (events.length === 0) return [];
    const rows = await this.tx.rows<{ ts: Date; type: string }>(
      `INSERT INTO ota_events (device_id, ts, type, from_version, to_version, progress_pct, error_code, message, received_at)
       SELECT $1, e.ts, e.type, e.from_version, e.to_version, e.progress_pct, e.error_code, e.message, $9
         FROM unnest($2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::text[], $8::text[])
           AS e (ts, type, from_version, to_version, progress_pct, error_code, message)
       ON CONFLICT (device_id, ts, type) DO NOTHING
       RETURNING ts, type`,
      [
        this.deviceId,
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
    // (ts, type) is the events' identity: the rows answered are the new ones, each stored once
    // (for the first event of the batch that carries it).
    const stored = new Set(rows.map((row) => `${row.ts.getTime()}|${row.type}`));
    return events.filter((event) => stored.delete(`${event.ts.getTime()}|${event.type}`));
  }

  async applyStates(changes: ReleaseStateChange[], receivedAt: Date): Promise<void> {
    if (changes.length === 0) return;
    await this.tx.rows(
      `INSERT INTO device_release_states (device_id, release_id, state, offered_at, last_event_ts, last_event_at)
       SELECT $1, c.release_id, c.state, NULL, c.ts, $5 FROM unnest($2::uuid[], $3::text[], $4::timestamptz[]) AS c (release_id, state, ts)
       ON CONFLICT (release_id, device_id) DO UPDATE
         SET state = EXCLUDED.state, last_event_ts = EXCLUDED.last_event_ts, last_event_at = EXCLUDED.last_event_at
         WHERE device_release_states.last_event_ts IS NULL OR device_release_states.last_event_ts <= EXCLUDED.last_event_ts`,
      [this.deviceId, changes.map((c) => c.releaseId), changes.map((c) => c.state), changes.map((c) => c.eventTs), receivedAt],
    );
  }

  /** Under the row lock taken by inBatch. */
  setFirmwareVersion(version: string, reportedAt: Date): Promise<void> {
    return this.devices.setFirmwareVersion(this.tx, this.deviceId, version, reportedAt);
  }

  touchLastSeen(now: Date): Promise<void> {
    return this.devices.seen(this.tx, this.deviceId, now);
  }
}
