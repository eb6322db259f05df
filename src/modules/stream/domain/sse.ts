/**
 * Server-Sent Events framing (HTML Living Standard, "Server-sent events"): what the dashboard
 * stream writes. JSON never holds a raw line break, so every `data:` is one line.
 */

/** Sent first: how long EventSource waits before it reconnects, and a comment that flushes the headers. */
export const OPENING = 'retry: 3000\n: connected\n\n';
export const HEARTBEAT = ': heartbeat\n\n';

export interface StreamedRecord {
  batteryId: string;
  ts: Date;
  metrics: Record<string, number>;
}

export interface StreamedEvent {
  /** `evt_<n>`: the SSE id, what Last-Event-ID resumes from. */
  id: string;
  type: string;
  deviceId: string;
  occurredAt: Date;
  data: Record<string, unknown>;
}

/** A stored telemetry record: `event: telemetry`, no id (records are not replayed). */
export function telemetryFrame(deviceId: string, record: StreamedRecord): string {
  return `event: telemetry\ndata: ${JSON.stringify({ deviceId, batteryId: record.batteryId, ts: record.ts.toISOString(), metrics: record.metrics })}\n\n`;
}

export interface StreamedLogLine {
  ts: Date;
  level: string;
  tag: string | null;
  message: string;
}

/** A stored log line of a gateway: `event: log`, no id (lines are not replayed). */
export function logFrame(deviceId: string, line: StreamedLogLine): string {
  return `event: log\ndata: ${JSON.stringify({ deviceId, ts: line.ts.toISOString(), level: line.level, tag: line.tag, message: line.message })}\n\n`;
}

/** An event of the log, named by its type, with the log's id as the SSE id. */
export function eventFrame(event: StreamedEvent): string {
  const data = { id: event.id, type: event.type, deviceId: event.deviceId, occurredAt: event.occurredAt.toISOString(), data: event.data };
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Frames joined into pieces of at most `maxLength` characters each (a single longer frame is a
 * piece of its own): PostgreSQL's NOTIFY takes at most 8000 bytes.
 */
export function joinFrames(frames: string[], maxLength: number): string[] {
  const pieces: string[] = [];
  let current = '';
  for (const frame of frames) {
    if (current.length > 0 && current.length + frame.length > maxLength) {
      pieces.push(current);
      current = '';
    }
    current += frame;
  }
  if (current.length > 0) pieces.push(current);
  return pieces;
}
