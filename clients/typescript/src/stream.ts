import type { DeviceCloudClient } from './client.js';
import { DeviceCloudProblem } from './problem.js';
import type { components } from './schema.js';

/** A record as the stream sends it: no id, records are not replayed after a break. */
export type StreamTelemetry = components['schemas']['StreamTelemetry'];
/** A gateway's log line as the stream sends it: no id, lines are not replayed after a break. */
export type StreamLogLine = components['schemas']['StreamLogLine'];
/** An event of the log, as GET /api/v1/dashboard/events lists it. */
export type DeviceEvent = components['schemas']['DeviceEventResponse'];

/** What openDashboardStream needs of an EventSource: the browser's, or the `eventsource` package's in Node. */
export interface EventSourceLike {
  addEventListener(type: string, listener: (event: { data: string }) => void): void;
  close(): void;
}
export type EventSourceConstructor = new (url: string) => EventSourceLike;

export interface DashboardStreamOptions {
  /** Only this device (one the customer can see). */
  deviceId?: string;
  /** Start after this event (an id of GET /dashboard/events): the events since are sent first. */
  lastEventId?: string;
  onTelemetry?(message: StreamTelemetry): void;
  onLog?(line: StreamLogLine): void;
  onEvent?(event: DeviceEvent): void;
  /**
   * The stream is open. `resumed`: after a break, from which the events were replayed but the
   * records were not: reload what shows them.
   */
  onOpen?(resumed: boolean): void;
  /** The connection broke; it reconnects by itself. */
  onClose?(): void;
  /**
   * A ticket could not be had. After a 401 or 403 (the session ended) the stream gives up; after
   * anything else it tries again.
   */
  onError?(error: unknown): void;
  /** Default: globalThis.EventSource (browsers; Node only with --experimental-eventsource). */
  EventSource?: EventSourceConstructor;
  /** First wait before reconnecting, doubled after each failure up to `maxReconnectDelayMs`. Default 1000. */
  reconnectDelayMs?: number;
  /** Default 30000. */
  maxReconnectDelayMs?: number;
}

export interface DashboardStream {
  /** The id of the last event received: where a reconnection resumes. */
  readonly lastEventId: string | undefined;
  close(): void;
}

/**
 * EventSource needs a listener per event name. A record over the contract's type, so the compiler
 * refuses this list the day openapi.json gains a type it lacks.
 */
const EVENT_TYPES = Object.keys({
  'device.claimed': true,
  'device.released': true,
  'device.decommissioned': true,
  'device.online': true,
  'device.offline': true,
  'alert.opened': true,
  'alert.resolved': true,
  'ota.succeeded': true,
  'ota.failed': true,
  'ota.release_paused': true,
  'config.applied': true,
  'device.crashed': true,
  'command.queued': true,
  'command.delivered': true,
  'command.succeeded': true,
  'command.failed': true,
  'command.rejected': true,
  'command.expired': true,
  'command.cancelled': true,
} satisfies Record<DeviceEvent['type'], true>) as DeviceEvent['type'][];

function eventSourceOf(options: DashboardStreamOptions): EventSourceConstructor {
  const found = options.EventSource ?? (globalThis as { EventSource?: EventSourceConstructor }).EventSource;
  if (!found) throw new TypeError('No EventSource here: pass one as the EventSource option (in Node: the eventsource package).');
  return found;
}

/**
 * The live stream of the signed-in customer's devices (an administrator's: every device).
 *
 * EventSource cannot send an Authorization header, so each connection is opened with a single-use
 * ticket (POST /api/v1/dashboard/stream/tickets, through the client and so its session). For the
 * same reason EventSource's own reconnection would reuse a spent ticket: after any break this
 * closes it and connects again with a fresh ticket and `lastEventId`, the id of the last event
 * received, from which the service replays the events that came meanwhile.
 */
export function openDashboardStream(client: DeviceCloudClient, options: DashboardStreamOptions = {}): DashboardStream {
  const EventSourceClass = eventSourceOf(options);
  const firstDelayMs = options.reconnectDelayMs ?? 1000;
  const maxDelayMs = options.maxReconnectDelayMs ?? 30_000;
  let lastEventId = options.lastEventId;
  let source: EventSourceLike | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let delayMs = firstDelayMs;
  let open = false;
  let wasOpen = false;
  let closed = false;

  async function connect(): Promise<void> {
    let ticket: string;
    try {
      const result = await client.POST('/api/v1/dashboard/stream/tickets');
      if (!result.data) {
        const problem = DeviceCloudProblem.from(result);
        options.onError?.(problem);
        if (problem.status === 401 || problem.status === 403) closed = true;
        else reconnect();
        return;
      }
      ticket = result.data.ticket;
    } catch (error) {
      options.onError?.(error);
      reconnect();
      return;
    }
    if (closed) return;
    const query = new URLSearchParams({ ticket });
    if (options.deviceId) query.set('deviceId', options.deviceId);
    if (lastEventId) query.set('lastEventId', lastEventId);
    const opened = new EventSourceClass(`${client.baseUrl}/api/v1/dashboard/stream?${query}`);
    source = opened;
    opened.addEventListener('open', () => {
      delayMs = firstDelayMs;
      open = true;
      options.onOpen?.(wasOpen);
      wasOpen = true;
    });
    opened.addEventListener('error', () => {
      opened.close();
      // Once more after the event: an EventSource that arms its own reconnection only after
      // dispatching the error (the eventsource package does) would keep that timer.
      setTimeout(() => opened.close(), 0);
      if (source !== opened || closed) return;
      if (open) {
        open = false;
        options.onClose?.();
      }
      reconnect();
    });
    opened.addEventListener('telemetry', (message) => options.onTelemetry?.(JSON.parse(message.data) as StreamTelemetry));
    opened.addEventListener('log', (message) => options.onLog?.(JSON.parse(message.data) as StreamLogLine));
    for (const type of EVENT_TYPES) {
      opened.addEventListener(type, (message) => {
        const event = JSON.parse(message.data) as DeviceEvent;
        lastEventId = event.id;
        options.onEvent?.(event);
      });
    }
  }

  function reconnect(): void {
    if (closed) return;
    timer = setTimeout(() => void connect(), delayMs);
    delayMs = Math.min(delayMs * 2, maxDelayMs);
  }

  void connect();
  return {
    get lastEventId() {
      return lastEventId;
    },
    close() {
      closed = true;
      clearTimeout(timer);
      source?.close();
    },
  };
}
