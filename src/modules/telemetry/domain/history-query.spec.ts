import { ValidationFailedError } from '../../../shared/domain-error.js';
import fc from 'fast-check';
import { autoBucketSec, parseBucket, parseInstant, resolveRange, rollupSpans, checkedSpans, edgeSlots, type HistoryRange } from './history-query.js';

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

describe('rollupSpans: which rollup level answers which part of the range', () => {
  const range = (from: string, to: string) => ({ from: at(from), to: at(to) });
  /** The pieces each source reads: raw = range minus the 5-minute span, a level = its span minus the next coarser one. */
  function pieces(r: HistoryRange, bucketSec: number): Record<'raw' | '5m' | '1h' | '6h' | '1d', Array<[string, string]>> {
    const spans = rollupSpans(r, bucketSec);
    const minus = (outer: HistoryRange, inner: HistoryRange): Array<[string, string]> =>
      [
        [outer.from, inner.from],
        [inner.to, outer.to],
      ]
        .filter(([lo, hi]) => lo < hi)
        .map(([lo, hi]) => [lo.toISOString(), hi.toISOString()]);
    return {
      raw: minus(r, spans[0]),
      '5m': minus(spans[0], spans[1]),
      '1h': minus(spans[1], spans[2]),
      '6h': minus(spans[2], spans[3]),
      '1d': minus(spans[3], { from: spans[3].to, to: spans[3].to }),
    };
  }

  it('an aligned day in 1-day buckets: the daily rollup alone', () => {
    expect(pieces(range('2026-11-20T00:00:00Z', '2026-11-21T00:00:00Z'), 86_400)).toEqual({
      raw: [],
      '5m': [],
      '1h': [],
      '6h': [],
      '1d': [['2026-11-20T00:00:00.000Z', '2026-11-21T00:00:00.000Z']],
    });
  });

  it('30 unaligned days in 6-hour buckets: 6-hour slots in the middle, hours, 5-minute slots and raw records towards the edges, no days', () => {
    expect(pieces(range('2026-10-22T19:32:10Z', '2026-11-21T19:32:10Z'), 21_600)).toEqual({
      raw: [
        ['2026-10-22T19:32:10.000Z', '2026-10-22T19:35:00.000Z'],
        ['2026-11-21T19:30:00.000Z', '2026-11-21T19:32:10.000Z'],
      ],
      '5m': [
        ['2026-10-22T19:35:00.000Z', '2026-10-22T20:00:00.000Z'],
        ['2026-11-21T19:00:00.000Z', '2026-11-21T19:30:00.000Z'],
      ],
      '1h': [
        ['2026-10-22T20:00:00.000Z', '2026-10-23T00:00:00.000Z'],
        ['2026-11-21T18:00:00.000Z', '2026-11-21T19:00:00.000Z'],
      ],
      '6h': [['2026-10-23T00:00:00.000Z', '2026-11-21T18:00:00.000Z']],
      '1d': [],
    });
  });

  it('3 unaligned days in 1-day buckets: days in the middle, hours, 5-minute slots and raw records towards the edges', () => {
    expect(pieces(range('2026-11-18T22:58:30Z', '2026-11-21T01:07:00Z'), 86_400)).toEqual({
      raw: [
        ['2026-11-18T22:58:30.000Z', '2026-11-18T23:00:00.000Z'],
        ['2026-11-21T01:05:00.000Z', '2026-11-21T01:07:00.000Z'],
      ],
      '5m': [['2026-11-21T01:00:00.000Z', '2026-11-21T01:05:00.000Z']],
      '1h': [
        ['2026-11-18T23:00:00.000Z', '2026-11-19T00:00:00.000Z'],
        ['2026-11-21T00:00:00.000Z', '2026-11-21T01:00:00.000Z'],
      ],
      '6h': [],
      '1d': [['2026-11-19T00:00:00.000Z', '2026-11-21T00:00:00.000Z']],
    });
  });

  it('7 days in 1-hour buckets: no 6-hour or daily slots, since they cannot answer hours', () => {
    expect(pieces(range('2026-11-14T00:00:00Z', '2026-11-21T00:00:00Z'), 3600)).toEqual({
      raw: [],
      '5m': [],
      '1h': [['2026-11-14T00:00:00.000Z', '2026-11-21T00:00:00.000Z']],
      '6h': [],
      '1d': [],
    });
  });

  it('15-minute buckets: the 5-minute rollup and raw edges only', () => {
    expect(pieces(range('2026-11-21T10:02:17Z', '2026-11-21T11:58:49Z'), 900)).toEqual({
      raw: [
        ['2026-11-21T10:02:17.000Z', '2026-11-21T10:05:00.000Z'],
        ['2026-11-21T11:55:00.000Z', '2026-11-21T11:58:49.000Z'],
      ],
      '5m': [['2026-11-21T10:05:00.000Z', '2026-11-21T11:55:00.000Z']],
      '1h': [],
      '6h': [],
      '1d': [],
    });
  });

  it('one millisecond past a slot boundary: the next slot', () => {
    expect(pieces(range('2026-11-21T10:00:00.001Z', '2026-11-21T10:15:00Z'), 300)['5m']).toEqual([['2026-11-21T10:05:00.000Z', '2026-11-21T10:15:00.000Z']]);
  });

  it.each([
    ['inside one slot', '2026-11-21T10:01:00Z', '2026-11-21T10:04:00Z'],
    ['across one boundary, no whole slot', '2026-11-21T10:02:00Z', '2026-11-21T10:08:00Z'],
  ])('too short (%s): raw records answer all', (_name, from, to) => {
    expect(pieces(range(from, to), 300)).toEqual({ raw: [[at(from).toISOString(), at(to).toISOString()]], '5m': [], '1h': [], '6h': [], '1d': [] });
  });

  it.each([60, 7, 420, 450, 299, 301])('a bucket that is no multiple of 300 (%d s): raw records answer all', (bucket) => {
    expect(pieces(range('2026-11-21T10:00:00Z', '2026-11-21T12:00:00Z'), bucket)).toEqual({
      raw: [['2026-11-21T10:00:00.000Z', '2026-11-21T12:00:00.000Z']],
      '5m': [],
      '1h': [],
      '6h': [],
      '1d': [],
    });
  });

  it('any range and bucket: the pieces tile the range exactly, each aligned to a width that divides the bucket, the coarsest exact level as wide as it can be', () => {
    const widths = { '5m': 300_000, '1h': 3_600_000, '6h': 21_600_000, '1d': 86_400_000 } as const;
    const base = Date.parse('2026-01-01T00:00:00Z');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 * DAY }),
        fc.integer({ min: 1, max: 40 * DAY }),
        fc.constantFrom(1, 7, 60, 300, 600, 900, 3600, 7200, 21_600, 43_200, 86_400, 172_800),
        (fromOffset, length, bucketSec) => {
          const r = { from: new Date(base + fromOffset), to: new Date(base + fromOffset + length) };
          const all = pieces(r, bucketSec);
          const tiles = [...all.raw, ...all['5m'], ...all['1h'], ...all['6h'], ...all['1d']].map(([lo, hi]) => [Date.parse(lo), Date.parse(hi)]).sort((a, b) => a[0] - b[0]);
          expect(tiles[0][0]).toBe(r.from.getTime());
          expect(tiles[tiles.length - 1][1]).toBe(r.to.getTime());
          for (let i = 1; i < tiles.length; i++) expect(tiles[i][0]).toBe(tiles[i - 1][1]);
          for (const level of ['5m', '1h', '6h', '1d'] as const) {
            for (const [lo, hi] of all[level]) {
              expect(Date.parse(lo) % widths[level]).toBe(0);
              expect(Date.parse(hi) % widths[level]).toBe(0);
              expect((bucketSec * 1000) % widths[level]).toBe(0);
            }
          }
          const coarsest = (['1d', '6h', '1h', '5m'] as const).find((level) => (bucketSec * 1000) % widths[level] === 0);
          if (coarsest) {
            const w = widths[coarsest];
            const alignedFrom = Math.ceil(r.from.getTime() / w) * w;
            const alignedTo = Math.floor(r.to.getTime() / w) * w;
            const expected = alignedTo > alignedFrom ? [[new Date(alignedFrom).toISOString(), new Date(alignedTo).toISOString()]] : [];
            expect(all[coarsest]).toEqual(expected);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('checkedSpans: the whole slots of a coarser level that an answer is cut into', () => {
  const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

  it('24 unaligned hours in 5-minute buckets: hours in the middle, 5-minute slots and raw records at the edges', () => {
    const checked = checkedSpans({ from: at('2026-11-20T19:32:10Z'), to: at('2026-11-21T19:32:10Z') }, 300)!;

    expect({ from: iso(checked.check.from), to: iso(checked.check.to), widthSec: checked.check.widthSec }).toEqual({ from: '2026-11-20T20:00:00.000Z', to: '2026-11-21T19:00:00.000Z', widthSec: 3600 });
    expect(checked.spans.map((span) => [span.from.toISOString(), span.to.toISOString()])).toEqual([
      ['2026-11-20T19:35:00.000Z', '2026-11-21T19:30:00.000Z'],
      ['2026-11-20T20:00:00.000Z', '2026-11-21T19:00:00.000Z'],
      ['2026-11-21T19:00:00.000Z', '2026-11-21T19:00:00.000Z'],
      ['2026-11-21T19:00:00.000Z', '2026-11-21T19:00:00.000Z'],
    ]);
  });

  it.each([
    ['daily buckets: no coarser level', 86_400, '2026-11-01T00:00:00Z', '2026-11-21T00:00:00Z'],
    ['7-second buckets: no level holds a whole number of them', 7, '2026-11-20T00:00:00Z', '2026-11-21T00:00:00Z'],
    ['5-minute buckets within one hour: no whole hour', 300, '2026-11-20T10:00:01Z', '2026-11-20T11:00:00Z'],
    ['2-hour buckets: a 6-hour slot holds three, but no whole one lies inside', 7200, '2026-11-20T01:00:00Z', '2026-11-20T11:00:00Z'],
  ])('%s: none', (_name, bucketSec, from, to) => {
    expect(checkedSpans({ from: at(from), to: at(to) }, bucketSec)).toBeNull();
  });

  it('any range and bucket: the check slots hold whole buckets, lie inside the range, and the levels and raw edges read every instant once', () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 * 86_400_000 }),
        fc.integer({ min: 1, max: 40 * 86_400_000 }),
        fc.constantFrom(60, 300, 600, 900, 3600, 7200, 21_600, 43_200, 86_400),
        (offset, length, bucketSec) => {
          const range = { from: new Date(start + offset), to: new Date(start + offset + length) };
          const checked = checkedSpans(range, bucketSec);
          if (checked === null) return;
          const { check, spans } = checked;
          expect(check.widthSec % bucketSec).toBe(0);
          expect(check.from % check.widthSec).toBe(0);
          expect(check.from * 1000).toBeGreaterThanOrEqual(range.from.getTime());
          expect(check.to * 1000).toBeLessThanOrEqual(range.to.getTime());
          // raw reads range − spans[0], level i spans[i] − spans[i + 1], the coarsest its whole span: together the range.
          const pieces = [range, ...spans];
          let read = 0;
          for (let i = 0; i < spans.length; i++) {
            const outer = pieces[i];
            const inner = pieces[i + 1];
            expect(inner.from.getTime()).toBeGreaterThanOrEqual(outer.from.getTime());
            expect(inner.to.getTime()).toBeLessThanOrEqual(outer.to.getTime());
            read += inner.from.getTime() - outer.from.getTime() + (outer.to.getTime() - inner.to.getTime());
          }
          const last = spans[spans.length - 1];
          read += last.to.getTime() - last.from.getTime();
          expect(read).toBe(length);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('edgeSlots: the five-minute slots whose records an answer of whole check slots takes raw', () => {
  const iso = (seconds: number | null) => (seconds === null ? null : new Date(seconds * 1000).toISOString());

  it('24 unaligned hours in 5-minute buckets: the slots of both ends, and the five-minute span widened over them', () => {
    const range = { from: at('2026-11-20T19:32:10Z'), to: at('2026-11-21T19:32:10Z') };
    const checked = checkedSpans(range, 300)!;

    const edges = edgeSlots(range, checked)!;

    expect({ first: iso(edges.slots.first), last: iso(edges.slots.last), widthSec: edges.slots.widthSec }).toEqual({ first: '2026-11-20T19:30:00.000Z', last: '2026-11-21T19:30:00.000Z', widthSec: 300 });
    expect(edges.spans.map((span) => [span.from.toISOString(), span.to.toISOString()])).toEqual([
      ['2026-11-20T19:30:00.000Z', '2026-11-21T19:35:00.000Z'],
      ...checked.spans.slice(1).map((span) => [span.from.toISOString(), span.to.toISOString()]),
    ]);
  });

  it('an end on a five-minute boundary has no edge slot, and the span ends there', () => {
    const range = { from: at('2026-11-20T19:35:00Z'), to: at('2026-11-21T19:32:10.001Z') };

    const edges = edgeSlots(range, checkedSpans(range, 900)!)!;

    expect({ first: iso(edges.slots.first), last: iso(edges.slots.last) }).toEqual({ first: null, last: '2026-11-21T19:30:00.000Z' });
    expect([edges.spans[0].from.toISOString(), edges.spans[0].to.toISOString()]).toEqual(['2026-11-20T19:35:00.000Z', '2026-11-21T19:35:00.000Z']);
  });

  it('1-minute buckets, checked by five-minute slots: none (the raw records are the edges themselves)', () => {
    const range = { from: at('2026-11-20T19:32:10Z'), to: at('2026-11-20T23:32:10Z') };

    expect(edgeSlots(range, checkedSpans(range, 60)!)).toBeNull();
  });

  it('any range and bucket: the edge slots are the five-minute slots the ends cut, and the widened span holds the old one and both', () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200 * 86_400_000 }),
        fc.integer({ min: 1, max: 40 * 86_400_000 }),
        fc.constantFrom(300, 600, 900, 3600, 7200, 21_600, 43_200),
        (offset, length, bucketSec) => {
          const range = { from: new Date(start + offset), to: new Date(start + offset + length) };
          const checked = checkedSpans(range, bucketSec);
          if (checked === null) return;
          const edges = edgeSlots(range, checked)!;
          const slotMs = 300_000;
          const { first, last } = edges.slots;
          expect(first === null).toBe(range.from.getTime() % slotMs === 0);
          expect(last === null).toBe(range.to.getTime() % slotMs === 0);
          if (first !== null) expect(first * 1000).toBe(Math.floor(range.from.getTime() / slotMs) * slotMs);
          if (last !== null) expect(last * 1000).toBe(Math.floor(range.to.getTime() / slotMs) * slotMs);
          const [widened, ...rest] = edges.spans;
          expect(rest).toEqual(checked.spans.slice(1));
          expect(widened.from.getTime()).toBe(first === null ? checked.spans[0].from.getTime() : first * 1000);
          expect(widened.to.getTime()).toBe(last === null ? checked.spans[0].to.getTime() : last * 1000 + slotMs);
        },
      ),
      { numRuns: 500 },
    );
  });
});
