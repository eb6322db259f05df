import type { NewDeviceEvent } from '../domain/device-event.js';
import type { JobQueue } from '../../../shared/jobs/job-queue.js';
import type { DeviceEventStore } from '../domain/device-event.store.js';
import { EventLog } from './event-log.js';

/** The event log for unit tests: keeps what would be recorded, in order, without a database. */
export class RecordingEventLog extends EventLog {
  readonly recorded: NewDeviceEvent[] = [];

  constructor() {
    super(null as unknown as JobQueue, null as unknown as DeviceEventStore);
  }

  override async record(_tx: unknown, event: NewDeviceEvent): Promise<string> {
    this.recorded.push(event);
    return `evt_${this.recorded.length}`;
  }
}
