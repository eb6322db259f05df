import fc from 'fast-check';
import { seriesParts } from './packed-series-parts.js';

/** float8send's bytes of `values`, one after another, as PostgreSQL's string_agg of them gives them. */
function float8sent(values: number[]): Buffer {
  const bytes = Buffer.alloc(8 * values.length);
  values.forEach((value, i) => bytes.writeDoubleBE(value, 8 * i));
  return bytes;
}

describe('seriesParts', () => {
  it('reads each column back to the very doubles PostgreSQL sent, aligned', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.double({ noNaN: true }), fc.integer({ min: 1, max: 2 ** 31 - 1 })), { maxLength: 300 }), (values) => {
        const doubles = values.map(([value]) => value);
        const counts = values.map(([, count]) => count);
        // A Buffer of node-pg's parser may start anywhere in a larger allocation: read from an odd offset too.
        const shifted = (buffer: Buffer) => Buffer.concat([Buffer.from([7]), buffer]).subarray(1);
        const parts = seriesParts({ battery_id: 'main', metric: 'soc', at: shifted(float8sent(doubles)), count: float8sent(counts), sum: float8sent(doubles), min: float8sent(doubles), max: float8sent(doubles) });
        expect(Array.from(parts.at)).toEqual(doubles);
        expect(Array.from(parts.count)).toEqual(counts);
        expect(Array.from(parts.sum)).toEqual(doubles);
        expect(parts).toMatchObject({ battery_id: 'main', metric: 'soc' });
      }),
    );
  });

  it('refuses a column whose length is not whole doubles', () => {
    const whole = float8sent([1]);
    expect(() => seriesParts({ battery_id: 'main', metric: 'soc', at: whole.subarray(0, 7), count: whole, sum: whole, min: whole, max: whole })).toThrow(RangeError);
  });
});
