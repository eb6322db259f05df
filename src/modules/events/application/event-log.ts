import { Injectable } from '@nestjs/common';
import type { SqlRunner } from '../../../shared/database/sql.js';
import { JobQueue } from '../../../shared/jobs/job-queue.js';
import { eventIdOf, type NewDeviceEvent } from '../domain/device-event.js';
import { DeviceEventStore } from '../domain/device-event.store.js';
import { EVENT_DISPATCH_QUEUE } from './event-dispatch.js';

/**
 * Records what happened to a device. Modules call it inside the transaction of the change the
 * event reports (a claim, a release, an OTA outcome), so an event exists exactly when its change
 * committed: none is lost when the process dies after the commit, none invented by a rollback.
 */
@Injectable()
export class EventLog {
  constructor(
    private readonly jobs: JobQueue,
    private readonly store: DeviceEventStore,
  ) {}

  /** Records the event and, in the same transaction, the job that hands it to the channels. */
  async record(tx: SqlRunner, event: NewDeviceEvent): Promise<string> {
    const eventId = eventIdOf(await this.store.insert(tx, event));
    await this.jobs.send(EVENT_DISPATCH_QUEUE, { eventId }, {}, tx);
    return eventId;
  }
}
