import { ValidationFailedError } from '../domain-error.js';

/** Opaque page cursors: base64url of a position the service chose. */
export function encodeCursor(value: string): string {
  return Buffer.from(value, 'utf8').toString('base64url');
}

export const invalidCursor = (message = 'cursor is not one this service returned') => new ValidationFailedError([{ field: 'cursor', message }]);

/**
 * The position inside a cursor; a 400 naming `cursor` when it is not one this service returned:
 * only the exact encoding encodeCursor gives (no padding, no stray bits, valid UTF-8) is read.
 */
export function decodeCursor(cursor: string, valid: (value: string) => boolean): string {
  const value = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (value === '' || encodeCursor(value) !== cursor || !valid(value)) throw invalidCursor();
  return value;
}

/** What toISOString writes for years 0000–9999: the only instants a time cursor holds. */
const CURSOR_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * A cursor holding (ts, tie-breaker) for newest-first or oldest-first keyset pagination. The
 * instant must be exactly as encodeTimeCursor wrote it: JavaScript's lenient date parser would
 * take "1" or "-271821-04-20", and PostgreSQL refuses years it cannot store with an error.
 */
export function decodeTimeCursor(cursor: string, validKey: (key: string) => boolean): { ts: Date; key: string } {
  let parsed: { ts: Date; key: string } | null = null;
  decodeCursor(cursor, (value) => {
    const separator = value.indexOf('|');
    const text = separator > 0 ? value.slice(0, separator) : '';
    const ts = new Date(CURSOR_INSTANT.test(text) ? text : Number.NaN);
    const key = value.slice(separator + 1);
    if (Number.isNaN(ts.getTime()) || ts.toISOString() !== text || !validKey(key)) return false;
    parsed = { ts, key };
    return true;
  });
  return parsed!;
}

export const encodeTimeCursor = (ts: Date, key: string): string => encodeCursor(`${ts.toISOString()}|${key}`);
