import { ValidationFailedError } from '../domain-error.js';

/** Opaque page cursors: base64url of a position the service chose. */
export function encodeCursor(value: string): string {
  return Buffer.from(value, 'utf8').toString('base64url');
}

/** The position inside a cursor; a 400 naming `cursor` when it is not one this service returned. */
export function decodeCursor(cursor: string, valid: (value: string) => boolean): string {
  const value = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!valid(value)) throw new ValidationFailedError([{ field: 'cursor', message: 'cursor is not one this service returned' }]);
  return value;
}

/** A cursor holding (ts, tie-breaker) for newest-first or oldest-first keyset pagination. */
export function decodeTimeCursor(cursor: string, validKey: (key: string) => boolean): { ts: Date; key: string } {
  let parsed: { ts: Date; key: string } | null = null;
  decodeCursor(cursor, (value) => {
    const separator = value.indexOf('|');
    const ts = new Date(separator > 0 ? value.slice(0, separator) : '');
    const key = value.slice(separator + 1);
    if (Number.isNaN(ts.getTime()) || !validKey(key)) return false;
    parsed = { ts, key };
    return true;
  });
  return parsed!;
}

export const encodeTimeCursor = (ts: Date, key: string): string => encodeCursor(`${ts.toISOString()}|${key}`);
