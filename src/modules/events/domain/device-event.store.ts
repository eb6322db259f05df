import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { NewDeviceEvent } from './device-event.js';

/** Where events are written. */
export abstract class DeviceEventStore {
  /** Stores the event in `tx`; answers its sequence. */
  abstract insert(tx: SqlRunner, event: NewDeviceEvent): Promise<string>;
}
