/** The events module's public surface: what other modules and the composition root may import. */
export { EventsModule } from './events.module.js';
export { EventLog } from './application/event-log.js';
export { DeviceEventQueries } from './domain/device-event.queries.js';
export { EventDispatch, type DispatchedEvent, type EventChannel } from './application/event-dispatch.js';
export { DEVICE_EVENT_TYPES, sequenceOf, type DeviceEventType, type NewDeviceEvent } from './domain/device-event.js';
export { DeviceEventResponse } from './http/events.dto.js';
import { DeviceEventRecord } from './infrastructure/device-event.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const EVENTS_RECORDS = [DeviceEventRecord];
