/** Telemetry frames of one device, as instances pass them on to each other. */
export interface TelemetryMessage {
  /** The device's owner when the records were stored; null when unclaimed. */
  ownerId: string | null;
  deviceId: string;
  /** SSE frames (domain/sse.ts), at most MAX_MESSAGE_LENGTH characters together. */
  frames: string;
}

/** PostgreSQL NOTIFY takes 8000 bytes; the frames leave room for the ids in front of them. */
export const MAX_MESSAGE_LENGTH = 7000;

/**
 * Port: carries stored telemetry to the other instances of the service. Each instance serves its
 * own subscribers what it stored itself, so a bus hands a listener only what other instances sent.
 */
export abstract class LiveBus {
  abstract publish(messages: TelemetryMessage[]): Promise<void>;
  abstract subscribe(listener: (message: TelemetryMessage) => void): void;
}

/** One line each for the sending instance, owner and device, then the frames. */
export function encodeMessage(origin: string, message: TelemetryMessage): string {
  return `${origin}\n${message.ownerId ?? ''}\n${message.deviceId}\n${message.frames}`;
}

/** The message, or null when it is malformed or was sent by `self`. */
export function decodeMessage(payload: string, self: string): TelemetryMessage | null {
  const first = payload.indexOf('\n');
  const second = payload.indexOf('\n', first + 1);
  const third = payload.indexOf('\n', second + 1);
  if (first < 0 || second < 0 || third < 0) return null;
  if (payload.slice(0, first) === self) return null;
  const ownerId = payload.slice(first + 1, second);
  return { ownerId: ownerId === '' ? null : ownerId, deviceId: payload.slice(second + 1, third), frames: payload.slice(third + 1) };
}
