import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import type { StreamViewer } from '../application/stream-hub.js';
import type { StreamedEvent } from '../domain/sse.js';

interface EventRow {
  id: string;
  type: string;
  device_id: string;
  owner_id: string | null;
  occurred_at: Date;
  data: Record<string, unknown>;
}

export type OwnedEvent = StreamedEvent & { ownerId: string | null };

const toEvent = (row: EventRow): OwnedEvent => ({ id: `evt_${row.id}`, type: row.type, deviceId: row.device_id, ownerId: row.owner_id, occurredAt: row.occurred_at, data: row.data });

/**
 * What the stream reads from the event log. A stream sees an event when it happened to a device
 * of the viewer's at the time (device_events.owner_id), the same rule live and on replay; an
 * administrator sees all.
 */
@Injectable()
export class SqlStreamEvents {
  constructor(private readonly sql: Sql) {}

  async byIds(sequences: string[]): Promise<OwnedEvent[]> {
    const rows = await this.sql.rows<EventRow>(
      'SELECT id, type, device_id, owner_id, occurred_at, data FROM device_events WHERE id = ANY($1::bigint[]) ORDER BY id',
      [sequences],
      'stream_events_by_id',
    );
    return rows.map(toEvent);
  }

  /** The viewer's events recorded after `sequence`, oldest first, at most `limit`. */
  async since(viewer: StreamViewer, deviceId: string | null, sequence: string, limit: number): Promise<OwnedEvent[]> {
    const rows = await this.sql.rows<EventRow>(
      `SELECT id, type, device_id, owner_id, occurred_at, data FROM device_events
        WHERE id > $1::bigint AND ($2::boolean OR owner_id = $3::uuid) AND ($4::text IS NULL OR device_id = $4)
        ORDER BY id LIMIT $5`,
      [sequence, viewer.isAdmin, viewer.userId, deviceId, limit],
      'stream_events_since',
    );
    return rows.map(toEvent);
  }

  async deviceVisible(viewer: StreamViewer, deviceId: string): Promise<boolean> {
    const rows = await this.sql.rows<{ found: number }>('SELECT 1 AS found FROM devices WHERE device_id = $1 AND ($2::boolean OR owner_id = $3::uuid)', [
      deviceId,
      viewer.isAdmin,
      viewer.userId,
    ]);
    return rows.length > 0;
  }
}
