import fc from 'fast-check';
import { DomainError } from '../domain-error.js';
import { FirmwareVersion } from './firmware-version.js';

const v = (value: string) => FirmwareVersion.parse(value);

describe('FirmwareVersion', () => {
  describe('parse', () => {
    it.each(['0.1.4', '1.0', '10.20.30.40'])('accepts %j', (value) => {
      expect(v(value).value).toBe(value);
    });

    it.each(['1', '1.2.3.4.5', 'v1.2', '1..2', '', '1.2.', ' 1.2', '1.2a'])('rejects %j as VALIDATION_FAILED on firmwareVersion', (value) => {
      expect(() => v(value)).toThrow(DomainError);
      expect(() => v(value)).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED', details: { errors: [expect.objectContaining({ field: 'firmwareVersion' })] } }));
    });
  });

  describe('compareTo', () => {
    it.each([
      ['0.1.10', '0.1.4', 1],
      ['0.1.9', '0.1.10', -1],
      ['1.0.0', '0.1.4', 1],
      ['1.0', '1.0.0', 0],
      ['1.0.0', '1.0', 0],
      ['0.1.3', '0.1.4', -1],
      ['0.1.4', '0.1.4', 0],
    ])('compares %s with %s numerically as %i', (left, right, expected) => {
      expect(v(left).compareTo(v(right))).toBe(expected);
    });

    it('is antisymmetric and orders like the zero-padded numeric parts', () => {
      const part = fc.integer({ min: 0, max: 999_999_999 });
      const version = fc.array(part, { minLength: 2, maxLength: 4 });
      // Independent oracle: pad to four parts of nine digits each, then compare the strings.
      const key = (parts: number[]) => [...parts, 0, 0, 0].slice(0, 4).map((p) => String(p).padStart(9, '0')).join('.');
      fc.assert(
        fc.property(version, version, (a, b) => {
          const left = v(a.join('.'));
          const right = v(b.join('.'));
          const expected = key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
          expect(left.compareTo(right)).toBe(expected);
          expect(right.compareTo(left)).toBe(-expected);
        }),
        { numRuns: 500 },
      );
    });
  });

  describe('requiresClaimCode', () => {
    it.each(['0.1.4', '0.1.10', '0.2.0', '1.0.0'])('is true for %s', (value) => {
      expect(v(value).requiresClaimCode()).toBe(true);
    });

    it.each(['0.1.3', '0.0.99'])('is false for %s', (value) => {
      expect(v(value).requiresClaimCode()).toBe(false);
    });
  });
});
