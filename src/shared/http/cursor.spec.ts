import { ValidationFailedError } from '../domain-error.js';
import { decodeCursor, decodeTimeCursor, encodeCursor, encodeTimeCursor } from './cursor.js';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const anyKey = (key: string) => /^[a-z0-9-]{1,20}$/.test(key);

/** The fields a refused cursor names; fails when the cursor is accepted. */
function refusal(decode: () => unknown): string[] {
  try {
    decode();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationFailedError);
    return ((error as ValidationFailedError).details as { errors: Array<{ field: string }> }).errors.map((problem) => problem.field);
  }
  throw new Error('the cursor was accepted');
}

describe('page cursors', () => {
  it('what encodeCursor and encodeTimeCursor write reads back', () => {
    expect(decodeCursor(encodeCursor('gw-0001'), anyKey)).toBe('gw-0001');
    const ts = new Date('2026-11-21T12:00:00.123Z');
    expect(decodeTimeCursor(encodeTimeCursor(ts, 'main'), anyKey)).toEqual({ ts, key: 'main' });
  });

  it.each([
    ['empty', ''],
    ['not base64url', 'not a cursor!'],
    ['base64 with padding', `${b64('gw-01')}=`],
    ['201 characters', 'a'.repeat(201)],
    ['a value the check refuses', b64('GW 0001')],
    ['invalid UTF-8 inside', Buffer.from([0xc3, 0x28, 0x61]).toString('base64url')],
  ])('%s: 400 naming cursor', (_name, cursor) => {
    expect(refusal(() => decodeCursor(cursor, anyKey))).toEqual(['cursor']);
  });

  it('another spelling of the same bytes (unused low bits set) is not one this service returned', () => {
    const canonical = b64('gw-01');
    const other = canonical.slice(0, -1) + String.fromCharCode(canonical.charCodeAt(canonical.length - 1) + 1);
    expect(Buffer.from(other, 'base64url').toString('utf8')).toBe('gw-01');

    expect(refusal(() => decodeCursor(other, anyKey))).toEqual(['cursor']);
  });

  it.each([
    ['no separator', '2026-11-21T12:00:00.000Z'],
    ['no instant', '|main'],
    ['an instant JavaScript reads leniently ("1" is 2001)', '1|main'],
    ['a date without time', '2026-11-21|main'],
    ['no milliseconds', '2026-11-21T12:00:00Z|main'],
    ['another zone', '2026-11-21T12:00:00.000+01:00|main'],
    ['30 February', '2026-02-30T00:00:00.000Z|main'],
    ['hour 24', '2026-11-21T24:00:00.000Z|main'],
    ['a year before PostgreSQL’s range', '-271821-04-20T00:00:00.000Z|main'],
    ['an extended year', '+275760-09-13T00:00:00.000Z|main'],
    ['a key the check refuses', '2026-11-21T12:00:00.000Z|MAIN PACK'],
  ])('a time cursor with %s: 400 naming cursor', (_name, value) => {
    expect(refusal(() => decodeTimeCursor(b64(value), anyKey))).toEqual(['cursor']);
  });

  it('the first and last instants of four-digit years are read', () => {
    for (const text of ['0000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
      expect(decodeTimeCursor(b64(`${text}|k`), anyKey)).toEqual({ ts: new Date(text), key: 'k' });
    }
  });
});
