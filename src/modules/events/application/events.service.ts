import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { sees, withinWindow } from '../../sharing/index.js';
import { eventIdOf, type DeviceEvent, type DeviceEventType } from '../domain/device-event.js';

export interface EventsViewer {
  userId: string;
  isAdmin: boolean;
}

export interface EventsPage {
  deviceId: string | null;
  types: DeviceEventType[] | null;
  /** Events recorded before this sequence (the cursor), or null for the newest. */
  before: string | null;
  limit: number;
}

interface EventRow {
  id: string;
  type: DeviceEventType;
  device_id: string;
  occurred_at: Date;
  data: Record<string, unknown>;
}

/**
 * The event log as the dashboard reads it, newest first. Visibility is the history's, by the sharing
 * module's one rule: the owner and those the device is shared with see its events, a later owner
 * (and their sharees) only those from the release before the claim on (devices.visible_since), an
 * administrator all.
 */
@Injectable()
export class EventsService {
  constructor(private readonly sql: Sql) {}

  async list(viewer: EventsViewer, page: EventsPage): Promise<DeviceEvent[]> {
    const rows = await this.sql.rows<EventRow>(
      `SELECT e.id, e.type, e.device_id, e.occurred_at, e.data
         FROM device_events e JOIN devices d ON d.device_id = e.device_id
        WHERE ${sees('d', '$1::boolean', '$2::uuid')} AND ${withinWindow('d', '$1::boolean', 'e.occurred_at')}
          AND ($3::text IS NULL OR e.device_id = $3)
          AND ($4::text[] IS NULL OR e.type = ANY($4::text[]))
          AND ($5::bigint IS NULL OR e.id < $5::bigint)
        ORDER BY e.id DESC
        LIMIT $6`,
      [viewer.isAdmin, viewer.userId, page.deviceId, page.types, page.before, page.limit],
      'events_list',
    );
    return rows.map((row) => ({ id: eventIdOf(row.id), type: row.type, deviceId: row.device_id, occurredAt: row.occurred_at, data: row.data }));
  }
}
