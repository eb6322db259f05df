import { randomUUID } from 'node:crypto';

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

/** An instance with streams says so at least this often… */
export const WATCHING_RENEW_MS = 10_000;
/** …and the others pass their telemetry on to it for this long after they last heard it. */
export const WATCHING_LEASE_MS = 3 * WATCHING_RENEW_MS;

/**
 * Port: carries stored telemetry to the other instances of the service. Each instance serves its
 * own subscribers what it stored itself, so a bus hands a listener only what other instances sent.
 *
 * Telemetry is worth sending only while another instance has streams: instances with streams
 * `announce` it (the relay, every WATCHING_RENEW_MS and before a stream opens), and
 * `othersWatching` says whether any did within WATCHING_LEASE_MS. An instance without streams
 * anywhere else sends nothing (no frames, no NOTIFY per flush).
 */
export abstract class LiveBus {
  protected readonly origin = randomUUID();
  private readonly listeners: Array<(message: TelemetryMessage) => void> = [];
  /** Other instances with streams: origin → when their last announcement expires. */
  private readonly watchers = new Map<string, number>();

  /** Sends encoded messages to every instance (this one hears its own and ignores them). */
  protected abstract send(payloads: string[]): Promise<void>;

  publish(messages: TelemetryMessage[]): Promise<void> {
    return messages.length === 0 ? Promise.resolve() : this.send(messages.map((message) => encodeMessage(this.origin, message)));
  }

  /** This instance has streams: the others should pass their telemetry on. */
  announce(): Promise<void> {
    return this.send([encodeWatching(this.origin)]);
  }

  subscribe(listener: (message: TelemetryMessage) => void): void {
    this.listeners.push(listener);
  }

  get othersWatching(): boolean {
    const now = Date.now();
    for (const [origin, expires] of this.watchers) {
      if (expires > now) return true;
      this.watchers.delete(origin);
    }
    return false;
  }

  /** A payload heard on the bus's channel. */
  protected received(payload: string): void {
    const heard = decodePayload(payload, this.origin);
    if (heard === null) return;
    if ('watching' in heard) this.watchers.set(heard.watching, Date.now() + WATCHING_LEASE_MS);
    else for (const listener of this.listeners) listener(heard);
  }
}

const WATCHING = 'watching';

/** One line each for the sending instance, owner and device, then the frames. */
export function encodeMessage(origin: string, message: TelemetryMessage): string {
  return `${origin}\n${message.ownerId ?? ''}\n${message.deviceId}\n${message.frames}`;
}

/** Two lines: the sending instance, and that it has streams. */
export function encodeWatching(origin: string): string {
  return `${origin}\n${WATCHING}`;
}

/** The message or announcement, or null when it is malformed or was sent by `self`. */
export function decodePayload(payload: string, self: string): TelemetryMessage | { watching: string } | null {
  const first = payload.indexOf('\n');
  if (first < 0) return null;
  const origin = payload.slice(0, first);
  if (origin === self) return null;
  const second = payload.indexOf('\n', first + 1);
  if (second < 0) return payload.slice(first + 1) === WATCHING ? { watching: origin } : null;
  const third = payload.indexOf('\n', second + 1);
  if (third < 0) return null;
  const ownerId = payload.slice(first + 1, second);
  return { ownerId: ownerId === '' ? null : ownerId, deviceId: payload.slice(second + 1, third), frames: payload.slice(third + 1) };
}
