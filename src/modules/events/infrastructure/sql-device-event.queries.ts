import { MEMBER_ORGANIZATIONS } from '../../organizations/sql-api.js';
import { Injectable } from '@nestjs/common';
import { ReplicaSql } from '../../../shared/database/replica-sql.js';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import { SHARED_WITH, VISIBLE_DEVICES } from '../../sharing/sql-api.js';
import { eventIdOf, type DeviceEvent, type DeviceEventType, type DispatchedEvent } from '../domain/device-event.js';
import { DeviceEventQueries, type EventsPage, type EventsViewer } from '../domain/device-event.queries.js';

interface EventRow {
  id: string;
  type: DeviceEventType;
  device_id: string;
  owner_id: string | null;
  occurred_at: Date;
  data: Record<string, unknown>;
}

const toEvent = (row: EventRow): DispatchedEvent => ({ id: eventIdOf(row.id), type: row.type, deviceId: row.device_id, ownerId: row.owner_id, occurredAt: row.occurred_at, data: row.data });

@Injectable()
export class SqlDeviceEventQueries extends DeviceEventQueries {
  constructor(
    private readonly sql: Sql,
    private readonly replica: ReplicaSql,
  ) {
    super();
  }

  async byIds(sequences: string[], tx: SqlRunner = this.sql): Promise<DispatchedEvent[]> {
    const rows = await tx.rows<EventRow>(
      'SELECT id, type, device_id, owner_id, occurred_at, data FROM device_events WHERE id = ANY($1::bigint[]) ORDER BY id',
      [sequences],
      'events_by_id',
    );
    return rows.map(toEvent);
  }

  async since(viewer: EventsViewer, deviceId: string | null, sequence: string, limit: number): Promise<DispatchedEvent[]> {
    const rows = await this.sql.rows<EventRow>(
      `SELECT id, type, device_id, owner_id, occurred_at, data FROM device_events
        WHERE id > $1::bigint
          AND ($2::boolean OR owner_id = $3::uuid
               OR owner_id IN (SELECT m.organization_id FROM ${MEMBER_ORGANIZATIONS}($3::uuid) m)
               OR (device_id, owner_id) IN (SELECT s.device_id, s.owner_id FROM ${SHARED_WITH}($3::uuid) s))
          AND ($4::text IS NULL OR device_id = $4)
        ORDER BY id LIMIT $5`,
      [sequence, viewer.isAdmin, viewer.userId, deviceId, limit],
      'events_since',
    );
    return rows.map(toEvent);
  }

  /** The event log: may be a few seconds old (a stream's catching up, since(), may not: it reads the primary). */
  async page(viewer: EventsViewer, page: EventsPage): Promise<DeviceEvent[]> {
    const rows = await this.replica.rows<EventRow>(
      `SELECT e.id, e.type, e.device_id, e.occurred_at, e.data
         FROM device_events e JOIN ${VISIBLE_DEVICES}($1::boolean, $2::uuid) v ON v.device_id = e.device_id
        WHERE e.occurred_at >= v.sees_from
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
