import { ValidationFailedError } from '../../../shared/domain-error.js';
import { ingestBodyPipe } from './ingest-telemetry.request.js';

const aRecord = (fields: Record<string, unknown> = {}) => ({ ts: '2026-11-21T12:00:00Z', metrics: { voltage: 52.1 }, ...fields });

/** The fields a refused body names; fails when the body passes. */
function fieldsOf(body: unknown): string[] {
  try {
    ingestBodyPipe.transform(body);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationFailedError);
    return ((error as ValidationFailedError).details as { errors: Array<{ field: string }> }).errors.map((problem) => problem.field);
  }
  throw new Error('the body passed');
}

describe('the ingest body schema (compiled JSON schema)', () => {
  it('a valid batch passes unchanged: no defaults added, nothing coerced', () => {
    const body = { records: [aRecord(), aRecord({ batteryId: 'pack-1', ts: '2026-11-21T13:00:00.123+01:00', metrics: { soc: 0, cellTemp_3: 1e308, a: -0.5 } })] };

    expect(ingestBodyPipe.transform(body)).toBe(body);
    expect(body.records[0]).toEqual(aRecord());
  });

  it('1 to 64 metrics under names up to 40 characters pass', () => {
    expect(() => ingestBodyPipe.transform({ records: [aRecord({ metrics: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`m${i}`, i])) })] })).not.toThrow();
    expect(() => ingestBodyPipe.transform({ records: [aRecord({ metrics: { [`m${'x'.repeat(39)}`]: 1 } })] })).not.toThrow();
  });

  it.each([
    ['null', null],
    ['an array', [1, 2]],
    ['a string', '{"voltage":1}'],
    ['a number', 1],
    ['no metric', {}],
    ['65 metrics', Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`m${i}`, i]))],
  ])('metrics %s: names the record’s metrics', (_name, metrics) => {
    expect(fieldsOf({ records: [aRecord(), aRecord({ metrics })] })).toEqual(['records.1.metrics']);
  });

  it.each(['Voltage', '1abc', 'a-b', '_a', 'a b', 'ä', '', `m${'x'.repeat(40)}`])('the metric name %p: names the record’s metrics', (name) => {
    expect(fieldsOf({ records: [aRecord({ metrics: { voltage: 1, [name]: 2 } })] })).toEqual(['records.0.metrics']);
  });

  it.each([
    ['Infinity (what 1e309 parses to)', Number.POSITIVE_INFINITY],
    ['-Infinity', Number.NEGATIVE_INFINITY],
    ['1.7e308', 1.7e308],
    ['5e-324', 5e-324],
  ])('the value %s passes the schema: the record is refused on its own later (VALUE_OUT_OF_RANGE), not the body', (_name, value) => {
    expect(() => ingestBodyPipe.transform({ records: [aRecord({ metrics: { soc: 80, voltage: value } })] })).not.toThrow();
  });

  it.each([
    ['a numeric string', '1.5'],
    ['null', null],
    ['a boolean', true],
    ['an object', { v: 1 }],
  ])('the value %s: names the record’s metrics', (_name, value) => {
    expect(fieldsOf({ records: [aRecord({ metrics: { soc: 80, voltage: value } })] })).toEqual(['records.0.metrics']);
  });

  it.each([
    ['no zone', '2026-11-21T12:00:00'],
    ['no real instant', '2026-02-30T12:00:00Z'],
    ['hour 25', '2026-11-21T25:00:00Z'],
    ['garbage', 'yesterday'],
    ['41 characters', `2026-11-21T12:00:00.000000${'0'.repeat(14)}Z`],
    ['a number', 1_763_726_400_000],
  ])('ts %s: names records.N.ts', (_name, ts) => {
    expect(fieldsOf({ records: [aRecord({ ts })] })).toEqual(['records.0.ts']);
  });

  it('missing and unknown properties are named where they are', () => {
    expect(fieldsOf({})).toEqual(['records']);
    expect(fieldsOf({ records: [{ metrics: { voltage: 1 } }] })).toEqual(['records.0.ts']);
    expect(fieldsOf({ records: [aRecord({ deviceId: 'gw-other' })] })).toEqual(['records.0.deviceId']);
    expect(fieldsOf({ records: [aRecord()], deviceId: 'gw-other' })).toEqual(['deviceId']);
  });

  it('not an object at all: the root', () => {
    for (const body of [null, [], 'records', 7]) expect(fieldsOf(body)).toEqual(['(root)']);
  });

  it('0 or 501 records: names records', () => {
    expect(fieldsOf({ records: [] })).toEqual(['records']);
    expect(fieldsOf({ records: Array.from({ length: 501 }, () => aRecord()) })).toEqual(['records']);
  });

  it('a hostile batch of 100,000 bad records reports at most 20 problems', () => {
    const fields = fieldsOf({ records: Array.from({ length: 100_000 }, (_, i) => ({ ts: i, metrics: 'x' })) });

    expect(fields.length).toBeLessThanOrEqual(20);
    expect(fields).toContain('records');
  });
});
