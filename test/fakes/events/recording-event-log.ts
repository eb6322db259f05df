import type { NewDeviceEvent } from '../../../src/modules/events/domain/device-event.js';
import type { JobQueue } from '../../../src/shared/jobs/job-queue.js';
import type { DeviceEventStore } from '../../../src/modules/events/domain/device-event.store.js';
import { EventLog } from '../../../src/modules/events/application/event-log.js';

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
