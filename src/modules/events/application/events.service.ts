import { Injectable } from '@nestjs/common';
import type { DeviceEvent } from '../domain/device-event.js';
import { DeviceEventQueries, type EventsPage, type EventsViewer } from '../domain/device-event.queries.js';

export type { EventsPage, EventsViewer } from '../domain/device-event.queries.js';

/**
 * The event log as the dashboard reads it, newest first. Visibility is the history's, by the sharing
 * module's one rule: the owner and those the device is shared with see its events, a later owner
 * (and their sharees) only those from the release before the claim on, an administrator all.
 */
@Injectable()
export class EventsService {
  constructor(private readonly reader: DeviceEventQueries) {}

  list(viewer: EventsViewer, page: EventsPage): Promise<DeviceEvent[]> {
    return this.reader.page(viewer, page);
  }
}
