/** Every event the log records, as the dashboard, the stream and webhooks name them. */
export const DEVICE_EVENT_TYPES = [
  'device.claimed',
  'device.released',
  'device.decommissioned',
  'device.online',
  'device.offline',
  'alert.opened',
  'alert.resolved',
  'ota.succeeded',
  'ota.failed',
  'ota.release_paused',
  'config.applied',
  'device.crashed',
  'command.queued',
  'command.delivered',
  'command.succeeded',
  'command.failed',
  'command.rejected',
  'command.expired',
  'command.cancelled',
] as const;

export type DeviceEventType = (typeof DEVICE_EVENT_TYPES)[number];

/** What a change reports, in the transaction that makes the change. */
export interface NewDeviceEvent {
  type: DeviceEventType;
  deviceId: string;
  /** The device's owner when it happened (the one who released, for device.released); null if none. */
  ownerId: string | null;
  occurredAt: Date;
  data: Record<string, unknown>;
}

export interface DeviceEvent {
  /** `evt_<n>`: unique, increasing in the order events were recorded, the same on every redelivery. */
  id: string;
  type: DeviceEventType;
  deviceId: string;
  occurredAt: Date;
  data: Record<string, unknown>;
}

/** An event as channels and streams see it: with the owner it happened to. */
export interface DispatchedEvent extends DeviceEvent {
  ownerId: string | null;
}

export const eventIdOf = (sequence: string): string => `evt_${sequence}`;

/** The sequence inside an event id, or null when the text is not one. */
export function sequenceOf(eventId: string): string | null {
  const match = /^evt_([1-9][0-9]{0,18})$/.exec(eventId);
  return match && BigInt(match[1]) <= 9_223_372_036_854_775_807n ? match[1] : null;
}
