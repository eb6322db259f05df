import { Readable } from 'node:stream';
import type { TelemetryExport } from '../application/telemetry-history.service.js';
import type { RawRecordRow } from '../domain/telemetry-history.queries.js';

/** RFC 4180 line break: after every line, the last one included. */
export const CRLF = '\r\n';

const NEEDS_QUOTES = /[",\r\n]/;

/** One field as RFC 4180 writes it: quoted when it holds a comma, a double quote, CR or LF, with its quotes doubled. */
export function csvField(value: string): string {
  return NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** A metric value as the JSON answers write it; a metric the record lacks is an empty field. */
function csvValue(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  return csvField(JSON.stringify(value));
}

/** The header: ts, batteryId, then one column per metric. */
export function csvHeader(metrics: readonly string[]): string {
  return ['ts', 'batteryId', ...metrics].map(csvField).join(',') + CRLF;
}

/**
 * Records as CSV lines (each ending in CRLF), columns in the order of `metrics`; ts as the API
 * writes instants (ISO 8601 UTC, milliseconds). `leading`: a first field of every line (the
 * deviceId of a fleet export).
 */
export function csvLines(records: readonly RawRecordRow[], metrics: readonly string[], leading?: string): string {
  const start = leading === undefined ? '' : `${csvField(leading)},`;
  let text = '';
  for (const record of records) {
    let line = `${start}${record.ts.toISOString()},${csvField(record.battery_id)}`;
    for (const metric of metrics) line += `,${csvValue(record.metrics[metric])}`;
    text += line + CRLF;
  }
  return text;
}

async function* csvText(exported: TelemetryExport): AsyncGenerator<string> {
  try {
    yield csvHeader(exported.metrics);
    for await (const batch of exported.batches()) yield csvLines(batch, exported.metrics);
  } finally {
    await exported.close();
  }
}

/**
 * The export as a byte stream: one chunk per fetched batch (~75 kB), pulled only when the
 * response has taken the previous one, so a slow reader slows the cursor instead of filling memory.
 * A byte stream, not an object one: its buffer is bounded in bytes (one chunk), not in chunks.
 * The export is closed when the stream closes for whatever reason — end, error or a client that
 * went away (Fastify destroys the stream then) — also if it was never read (a generator that never
 * started runs no finally).
 */
export function csvStream(exported: TelemetryExport): Readable {
  const stream = Readable.from(csvText(exported), { objectMode: false, highWaterMark: 64 * 1024 });
  stream.once('close', () => {
    exported.close().catch(() => undefined);
  });
  return stream;
}
