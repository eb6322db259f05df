import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { PendingNotifications, type NotifiedEvent } from '../domain/pending-notifications.js';

@Injectable()
export class SqlPendingNotifications extends PendingNotifications {
  constructor(private readonly sql: Sql) {
    super();
  }

  async add(userId: string, eventId: string): Promise<void> {
    await this.sql.rows('INSERT INTO pending_notifications (user_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [userId, eventId.replace(/^evt_/, '')]);
  }

  drain(userId: string, send: (events: NotifiedEvent[]) => Promise<void>): Promise<number> {
    return this.sql.transaction(async (tx) => {
      const rows = await tx.rows<{ id: string; type: string; device_id: string; occurred_at: Date; data: Record<string, unknown> }>(
        `SELECT e.id, e.type, e.device_id, e.occurred_at, e.data
           FROM pending_notifications p JOIN device_events e ON e.id = p.event_id
          WHERE p.user_id = $1 ORDER BY e.id FOR UPDATE OF p SKIP LOCKED`,
        [userId],
      );
      if (rows.length === 0) return 0;
      await send(rows.map((row) => ({ id: `evt_${row.id}`, type: row.type, deviceId: row.device_id, occurredAt: row.occurred_at, data: row.data })));
      await tx.rows('DELETE FROM pending_notifications WHERE user_id = $1 AND event_id = ANY($2::bigint[])', [userId, rows.map((row) => row.id)]);
      return rows.length;
    });
  }
}
