import { Injectable } from '@nestjs/common';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { NewDeviceEvent } from '../domain/device-event.js';
import { DeviceEventStore } from '../domain/device-event.store.js';

@Injectable()
export class SqlDeviceEventStore extends DeviceEventStore {
  async insert(tx: SqlRunner, event: NewDeviceEvent): Promise<string> {
    const [row] = await tx.rows<{ id: string }>(
      'INSERT INTO device_events (type, device_id, owner_id, occurred_at, data) VALUES ($1, $2, $3, $4, $5) RETURNING id',
      [event.type, event.deviceId, event.ownerId, event.occurredAt, JSON.stringify(event.data)],
    );
    return row.id;
  }
}
