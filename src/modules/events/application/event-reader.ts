import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { seesOwnedBy } from '../../sharing/index.js';
import { eventIdOf, type DeviceEventType } from '../domain/device-event.js';
import type { DispatchedEvent } from './event-dispatch.js';

interface EventRow {
  id: string;
  type: DeviceEventType;
  device_id: string;
  owner_id: string | null;
  occurred_at: Date;
  data: Record<string, unknown>;
}

const toEvent = (row: EventRow): DispatchedEvent => ({ id: eventIdOf(row.id), type: row.type, deviceId: row.device_id, ownerId: row.owner_id, occurredAt: row.occurred_at, data: row.data });

/**
 * Events of the log with the owner they happened to, as the channels (dispatch) and the live
 * stream read them. An owner's stream sees the events of devices that were theirs when they
 * happened (owner_id), live and on replay alike, and so do those who hold an active share granted by
 * that owner (the sharing module's rule); an administrator sees all.
 */
@Injectable()
export class EventReader {
  constructor(private readonly sql: Sql) {}

  /** The events of these sequences (missing ones: their device was deleted, and its events), in order. */
  async byIds(sequences: string[]): Promise<DispatchedEvent[]> {
    const rows = await this.sql.rows<EventRow>(
      'SELECT id, type, device_id, owner_id, occurred_at, data FROM device_events WHERE id = ANY($1::bigint[]) ORDER BY id',
      [sequences],
      'events_by_id',
    );
    return rows.map(toEvent);
  }

  /** The viewer's events recorded after `sequence`, oldest first, at most `limit`. */
  async since(viewer: { userId: string; isAdmin: boolean }, deviceId: string | null, sequence: string, limit: number): Promise<DispatchedEvent[]> {
    const rows = await this.sql.rows<EventRow>(
      `SELECT id, type, device_id, owner_id, occurred_at, data FROM device_events
        WHERE id > $1::bigint AND ${seesOwnedBy('device_id', 'owner_id', '$2::boolean', '$3::uuid')} AND ($4::text IS NULL OR device_id = $4)
        ORDER BY id LIMIT $5`,
      [sequence, viewer.isAdmin, viewer.userId, deviceId, limit],
      'events_since',
    );
    return rows.map(toEvent);
  }
}
