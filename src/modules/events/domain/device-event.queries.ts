import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { DeviceEvent, DeviceEventType, DispatchedEvent } from './device-event.js';

export interface EventsViewer {
  userId: string;
  isAdmin: boolean;
}

export interface EventsPage {
  deviceId: string | null;
  types: DeviceEventType[] | null;
  /** Events recorded before this sequence (the cursor), or null for the newest. */
  before: string | null;
  limit: number;
}

/**
 * The event log as it is read. Visibility is the sharing module's one rule, in two forms: the
 * dashboard's pages follow the device's history (the owner and their sharees see its events from
 * the release before the claim on, an administrator all); the channels and the live stream follow
 * the owner an event happened to (owner_id), live and on replay alike: the events of devices that
 * were the viewer's when they happened (their personal organization's, or an organization's they
 * are a member of now), or of an owner whose active share they hold.
 */
export abstract class DeviceEventQueries {
  /** The events of these sequences (missing ones: their device was deleted, and its events), in order; in `tx` when given. */
  abstract byIds(sequences: string[], tx?: SqlRunner): Promise<DispatchedEvent[]>;

  /** The viewer's events recorded after `sequence`, oldest first, at most `limit`. */
  abstract since(viewer: EventsViewer, deviceId: string | null, sequence: string, limit: number): Promise<DispatchedEvent[]>;

  /** A page of the events of the devices the viewer sees, newest first. */
  abstract page(viewer: EventsViewer, page: EventsPage): Promise<DeviceEvent[]>;
}
