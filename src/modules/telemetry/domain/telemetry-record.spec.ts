import { admit, MAX_METRIC_MAGNITUDE, MIN_METRIC_MAGNITUDE, type TelemetryRecord } from './telemetry-record.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const MINUTE = 60_000;
const DAY = 86_400_000;

const aRecord = (offsetMs: number, metrics: Record<string, number> = { voltage: 52.1 }): TelemetryRecord => ({
  ts: new Date(NOW.getTime() + offsetMs),
  batteryId: 'main',
  metrics,
});

describe('admit: records refused on their own, by the server clock', () => {
  const retentionDays = 30;

  it('keeps the order and the index of each record; accepted records are unchanged', () => {
    const records = [aRecord(-MINUTE), aRecord(-2 * MINUTE, { soc: 1 }), aRecord(0)];

    const { accepted, rejected } = admit(records, NOW, retentionDays);

    expect(rejected).toEqual([]);
    expect(accepted).toEqual(records.map((record, index) => ({ ...record, index })));
  });

  it('up to 5 minutes ahead is accepted; 1 ms more is TS_IN_FUTURE', () => {
    const { accepted, rejected } = admit([aRecord(5 * MINUTE), aRecord(5 * MINUTE + 1)], NOW, retentionDays);

    expect(accepted.map((record) => record.index)).toEqual([0]);
    expect(rejected).toEqual([{ index: 1, code: 'TS_IN_FUTURE' }]);
  });

  it('exactly the retention window old is accepted; 1 ms older is TS_BEYOND_RETENTION', () => {
    const { accepted, rejected } = admit([aRecord(-retentionDays * DAY - 1), aRecord(-retentionDays * DAY)], NOW, retentionDays);

    expect(accepted.map((record) => record.index)).toEqual([1]);
    expect(rejected).toEqual([{ index: 0, code: 'TS_BEYOND_RETENTION' }]);
  });

  it('a mixed batch: rejections by index, in order, the rest accepted', () => {
    const records = [aRecord(-MINUTE), aRecord(DAY), aRecord(-29 * DAY), aRecord(-31 * DAY), aRecord(6 * MINUTE), aRecord(-1)];

    const { accepted, rejected } = admit(records, NOW, retentionDays);

    expect(accepted.map((record) => record.index)).toEqual([0, 2, 5]);
    expect(rejected).toEqual([
      { index: 1, code: 'TS_IN_FUTURE' },
      { index: 3, code: 'TS_BEYOND_RETENTION' },
      { index: 4, code: 'TS_IN_FUTURE' },
    ]);
  });

  it('the retention window follows its setting', () => {
    expect(admit([aRecord(-100 * DAY)], NOW, 365).rejected).toEqual([]);
    expect(admit([aRecord(-100 * DAY)], NOW, 99).rejected).toEqual([{ index: 0, code: 'TS_BEYOND_RETENTION' }]);
  });

  it.each([
    ['the upper bound', MAX_METRIC_MAGNITUDE],
    ['minus the upper bound', -MAX_METRIC_MAGNITUDE],
    ['the lower bound', MIN_METRIC_MAGNITUDE],
    ['minus the lower bound', -MIN_METRIC_MAGNITUDE],
    ['0', 0],
    ['-0', -0],
    ['an ordinary reading', -3.4],
  ])('a metric value at %s is accepted', (_name, value) => {
    const { accepted, rejected } = admit([aRecord(0, { voltage: 52.1, v: value })], NOW, retentionDays);

    expect(rejected).toEqual([]);
    expect(accepted).toHaveLength(1);
  });

  it.each([
    ['Infinity (what 1e999 parses to)', Number.POSITIVE_INFINITY],
    ['-Infinity', Number.NEGATIVE_INFINITY],
    ['NaN', Number.NaN],
    ['1.7e308', 1.7e308],
    ['-1e308', -1e308],
    ['one step above the upper bound', 1_000_000_000_000.0001],
    ['one step below minus the upper bound', -1_000_000_000_000.0001],
    ['a subnormal (5e-324)', 5e-324],
    ['a negative subnormal', -5e-324],
    ['just below the lower bound', 9.99e-13],
    ['Number.MAX_VALUE', Number.MAX_VALUE],
  ])('a metric value %s: that record is VALUE_OUT_OF_RANGE, the others are accepted', (_name, value) => {
    const { accepted, rejected } = admit([aRecord(-MINUTE), aRecord(0, { voltage: 52.1, v: value }), aRecord(-2 * MINUTE)], NOW, retentionDays);

    expect(accepted.map((record) => record.index)).toEqual([0, 2]);
    expect(rejected).toEqual([{ index: 1, code: 'VALUE_OUT_OF_RANGE' }]);
  });

  it('a timestamp problem is reported before a value problem', () => {
    expect(admit([aRecord(DAY, { v: Number.POSITIVE_INFINITY })], NOW, retentionDays).rejected).toEqual([{ index: 0, code: 'TS_IN_FUTURE' }]);
  });

  it('an empty batch: nothing either way', () => {
    expect(admit([], NOW, retentionDays)).toEqual({ accepted: [], rejected: [] });
  });
});
