import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { DeviceEventQueries, sequenceOf } from '../../events/index.js';
import { PendingNotificationStore, type NotifiedEvent } from '../domain/pending-notification.store.js';

@Injectable()
export class SqlPendingNotificationStore extends PendingNotificationStore {
  constructor(
    private readonly sql: Sql,
    private readonly events: DeviceEventQueries,
  ) {
    super();
  }

  async add(userId: string, eventId: string): Promise<void> {
    await this.sql.rows('INSERT INTO pending_notifications (user_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [userId, eventId.replace(/^evt_/, '')]);
  }

  drain(userId: string, send: (events: NotifiedEvent[]) => Promise<void>): Promise<number> {
    return this.sql.transaction(async (tx) => {
      const pending = await tx.rows<{ event_id: string }>('SELECT event_id FROM pending_notifications WHERE user_id = $1 ORDER BY event_id FOR UPDATE SKIP LOCKED', [userId]);
      if (pending.length === 0) return 0;
      // In this transaction, which holds the notifications: their events cannot go (deleting an event deletes its notifications).
      const events = await this.events.byIds(
        pending.map((row) => row.event_id),
        tx,
      );
      await send(events.map((event) => ({ id: event.id, type: event.type, deviceId: event.deviceId, occurredAt: event.occurredAt, data: event.data })));
      await tx.rows('DELETE FROM pending_notifications WHERE user_id = $1 AND event_id = ANY($2::bigint[])', [userId, events.map((event) => sequenceOf(event.id))]);
      return events.length;
    });
  }
}
