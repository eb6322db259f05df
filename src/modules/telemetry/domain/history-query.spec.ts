import { ValidationFailedError } from '../../../shared/domain-error.js';
import { autoBucketSec, parseBucket, parseInstant, resolveRange, rollupSpan } from './history-query.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const NOW = new Date('2026-11-21T12:34:56.789Z');

/** The fields a ValidationFailedError thrown by `work` names; fails when nothing or something else is thrown. */
function fieldsThrownBy(work: () => unknown): string[] {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationFailedError);
    return ((error as ValidationFailedError).details.errors ?? []).map((problem) => problem.field);
  }
  throw new Error('expected a ValidationFailedError, nothing was thrown');
}

const at = (iso: string) => new Date(iso);

describe('autoBucketSec: the smallest of 60, 300, 900, 3600, 21600, 86400 s keeping ≤ 500 points', () => {
  it.each([
    ['an empty range', 60, 0],
    ['1 hour', 60, HOUR],
    ['6 hours', 60, 6 * HOUR],
    ['500 minutes (500 points)', 60, 500 * MINUTE],
    ['500 minutes and 1 ms (501 points)', 300, 500 * MINUTE + 1],
    ['24 hours', 300, DAY],
    ['2 days', 900, 2 * DAY],
    ['7 days', 3600, 7 * DAY],
    ['30 days', 21_600, 30 * DAY],
    ['366 days', 86_400, 366 * DAY],
    ['1000 days (more than 500 days even at a day per point)', 86_400, 1000 * DAY],
  ])('%s → %d s', (_name, bucket, span) => {
    expect(autoBucketSec(NOW.getTime() - span, NOW.getTime())).toBe(bucket);
  });
});

describe('parseBucket', () => {
  it('absent or auto: auto', () => {
    expect(parseBucket(undefined)).toEqual({ kind: 'auto' });
    expect(parseBucket('auto')).toEqual({ kind: 'auto' });
  });

  it('raw: raw', () => {
    expect(parseBucket('raw')).toEqual({ kind: 'raw' });
  });

  it.each([
    ['1', 1],
    ['7', 7],
    ['300', 300],
    ['000060', 60],
    ['999999999', 999_999_999],
  ])('%s: %d seconds', (raw, seconds) => {
    expect(parseBucket(raw)).toEqual({ kind: 'seconds', seconds });
  });

  it.each(['', '0', '000', '-5', 'abc', '1.5', '1e3', ' 60', '60 ', '+60', '1000000000', 'RAW', 'Auto', '0x10'])('%p: refused, naming bucket', (raw) => {
    expect(fieldsThrownBy(() => parseBucket(raw))).toEqual(['bucket']);
  });
});

describe('parseInstant', () => {
  it.each([
    ['2026-11-21T12:00:00Z', '2026-11-21T12:00:00.000Z'],
    ['2026-11-21T12:00Z', '2026-11-21T12:00:00.000Z'],
    ['2026-11-21T14:00:00+02:00', '2026-11-21T12:00:00.000Z'],
    ['2026-11-21T07:30:00-04:30', '2026-11-21T12:00:00.000Z'],
    ['2026-11-21T12:00:00.5Z', '2026-11-21T12:00:00.500Z'],
    ['2026-11-21T12:00:00.123456Z', '2026-11-21T12:00:00.123Z'],
  ])('%s is %s', (value, expected) => {
    expect(parseInstant(value, 'from').toISOString()).toBe(expected);
  });

  it.each([
    ['without a zone', '2026-11-21T12:00:00'],
    ['a date only', '2026-11-21'],
    ['seven fraction digits', '2026-11-21T12:00:00.1234567Z'],
    ['a space instead of T', '2026-11-21 12:00:00Z'],
    ['garbage', 'yesterday'],
    ['empty', ''],
    ['epoch milliseconds', '1763726400000'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['hour 25', '2026-11-21T25:00:00Z'],
  ])('%s: refused, naming the field it was given', (_name, value) => {
    expect(fieldsThrownBy(() => parseInstant(value, 'to'))).toEqual(['to']);
    expect(fieldsThrownBy(() => parseInstant(value, 'from'))).toEqual(['from']);
  });
});

describe('resolveRange: from inclusive, to exclusive, default the last 24 hours, at most 366 days', () => {
  it('neither: the 24 hours before now', () => {
    expect(resolveRange(undefined, undefined, NOW)).toEqual({ from: new Date(NOW.getTime() - DAY), to: NOW });
  });

  it('only to: the 24 hours before it', () => {
    expect(resolveRange(undefined, '2026-01-10T00:00:00Z', NOW)).toEqual({ from: at('2026-01-09T00:00:00Z'), to: at('2026-01-10T00:00:00Z') });
  });

  it('only from: from it to now', () => {
    expect(resolveRange('2026-11-01T00:00:00Z', undefined, NOW)).toEqual({ from: at('2026-11-01T00:00:00Z'), to: NOW });
  });

  it('both', () => {
    expect(resolveRange('2026-11-01T00:00:00Z', '2026-11-02T00:00:00+01:00', NOW)).toEqual({ from: at('2026-11-01T00:00:00Z'), to: at('2026-11-01T23:00:00Z') });
  });

  it('exactly 366 days is allowed', () => {
    const to = at('2026-11-21T00:00:00Z');
    expect(resolveRange(new Date(to.getTime() - 366 * DAY).toISOString(), to.toISOString(), NOW).from).toEqual(new Date(to.getTime() - 366 * DAY));
  });

  it.each([
    ['from after to', '2026-11-02T00:00:00Z', '2026-11-01T00:00:00Z', 'from'],
    ['from equal to to', '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z', 'from'],
    ['from in the future, to defaulting to now', '2026-12-01T00:00:00Z', undefined, 'from'],
    ['366 days and 1 ms', '2025-11-18T23:59:59.999Z', '2026-11-20T00:00:00Z', 'to'],
    ['from without a zone', '2026-11-01T00:00:00', '2026-11-02T00:00:00Z', 'from'],
    ['to without a zone', '2026-11-01T00:00:00Z', '2026-11-02T00:00:00', 'to'],
  ])('%s: refused, naming the field', (_name, from, to, field) => {
    expect(fieldsThrownBy(() => resolveRange(from, to, NOW))).toEqual([field]);
  });
});

describe('rollupSpan: the 5-minute-aligned inner span the rollup may answer', () => {
  const range = (from: string, to: string) => ({ from: at(from), to: at(to) });

  it('an aligned range and bucket 300: the whole range', () => {
    expect(rollupSpan(range('2026-11-21T10:00:00Z', '2026-11-21T12:00:00Z'), 300)).toEqual(range('2026-11-21T10:00:00Z', '2026-11-21T12:00:00Z'));
  });

  it('an aligned range and a bucket that is a multiple of 300 (3600): the whole range', () => {
    expect(rollupSpan(range('2026-11-21T10:05:00Z', '2026-11-21T12:40:00Z'), 3600)).toEqual(range('2026-11-21T10:05:00Z', '2026-11-21T12:40:00Z'));
  });

  it('an unaligned range: from rounded up, to rounded down to 5 minutes', () => {
    expect(rollupSpan(range('2026-11-21T10:02:17Z', '2026-11-21T11:58:49Z'), 900)).toEqual(range('2026-11-21T10:05:00Z', '2026-11-21T11:55:00Z'));
  });

  it('one millisecond past a slot boundary: the next slot', () => {
    expect(rollupSpan(range('2026-11-21T10:00:00.001Z', '2026-11-21T10:15:00Z'), 300)).toEqual(range('2026-11-21T10:05:00Z', '2026-11-21T10:15:00Z'));
  });

  it('exactly one whole slot inside: that slot', () => {
    expect(rollupSpan(range('2026-11-21T10:04:59Z', '2026-11-21T10:10:01Z'), 300)).toEqual(range('2026-11-21T10:05:00Z', '2026-11-21T10:10:00Z'));
  });

  it.each([
    ['inside one slot', '2026-11-21T10:01:00Z', '2026-11-21T10:04:00Z'],
    ['across one boundary, no whole slot', '2026-11-21T10:02:00Z', '2026-11-21T10:08:00Z'],
  ])('too short (%s): null, raw records answer all', (_name, from, to) => {
    expect(rollupSpan(range(from, to), 300)).toBeNull();
  });

  it.each([60, 7, 420, 450, 299, 301])('a bucket that is no multiple of 300 (%d s): null', (bucket) => {
    expect(rollupSpan(range('2026-11-21T10:00:00Z', '2026-11-21T12:00:00Z'), bucket)).toBeNull();
  });

  it.each([600, 900, 3600, 21_600, 86_400])('a bucket of %d s over an aligned day: the whole day', (bucket) => {
    expect(rollupSpan(range('2026-11-21T00:00:00Z', '2026-11-22T00:00:00Z'), bucket)).toEqual(range('2026-11-21T00:00:00Z', '2026-11-22T00:00:00Z'));
  });
});
