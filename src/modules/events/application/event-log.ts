import { Injectable } from '@nestjs/common';
import type { SqlRunner } from '../../../shared/database/sql.js';
import { JobQueue } from '../../../shared/jobs/job-queue.js';
import { eventIdOf, type NewDeviceEvent } from '../domain/device-event.js';
import { EVENT_DISPATCH_QUEUE } from './event-dispatch.js';

/**
 * Records what happened to a device. Modules call it inside the transaction of the change the
 * event reports (a claim, a release, an OTA outcome), so an event exists exactly when its change
 * committed: none is lost when the process dies after the commit, none invented by a rollback.
 */
@Injectable()
export class EventLog {
  constructor(private readonly jobs: JobQueue) {}

  /** Records the event and, in the same transaction, the job that hands it to the channels. */
  async record(tx: SqlRunner, event: NewDeviceEvent): Promise<string> {
    const [row] = await tx.rows<{ id: string }>(
      'INSERT INTO device_events (type, device_id, owner_id, occurred_at, data) VALUES ($1, $2, $3, $4, $5) RETURNING id',
      [event.type, event.deviceId, event.ownerId, event.occurredAt, JSON.stringify(event.data)],
    );
    const eventId = eventIdOf(row.id);
    await this.jobs.send(EVENT_DISPATCH_QUEUE, { eventId }, {}, tx);
    return eventId;
  }
}
