import { Injectable } from '@nestjs/common';
import { JobQueue } from '../../../shared/jobs/job-queue.js';
import { sequenceOf, type DispatchedEvent } from '../domain/device-event.js';
import { DeviceEventQueries } from '../domain/device-event.queries.js';

export type { DispatchedEvent } from '../domain/device-event.js';

export const EVENT_DISPATCH_QUEUE = 'events.dispatch';

/**
 * Where an event goes beyond the log (webhooks, e-mail). A channel only enqueues its own jobs, with
 * ids derived from the event, so a dispatch that runs twice enqueues nothing twice.
 */
export interface EventChannel {
  fanOut(event: DispatchedEvent): Promise<void>;
}

/**
 * Job `events.dispatch`: EventLog enqueues one per event, in the event's transaction; this hands the
 * event to every channel. Retried like any job until every channel took it.
 */
@Injectable()
export class EventDispatch {
  private readonly channels: EventChannel[] = [];

  constructor(
    jobs: JobQueue,
    private readonly reader: DeviceEventQueries,
  ) {
    jobs.define<{ eventId: string }>({ name: EVENT_DISPATCH_QUEUE, retry: { delaySec: 2, delayMaxSec: 600, limit: 200 }, expireInSec: 300 }, (job) => this.dispatch(job.eventId), { concurrency: 2 });
  }

  register(channel: EventChannel): void {
    this.channels.push(channel);
  }

  async dispatch(eventId: string): Promise<void> {
    const sequence = sequenceOf(eventId);
    if (!sequence) return;
    const [event] = await this.reader.byIds([sequence]);
    if (!event) return; // its device was deleted, and the event with it
    for (const channel of this.channels) await channel.fanOut(event);
  }
}
