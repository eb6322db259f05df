import fc from 'fast-check';
import { DomainError } from '../../../shared/domain-error.js';
import { normalizeName, normalizeTag, parseLabelsPatch, TAG_PATTERN } from './device-labels.js';

/** The fields a refusal names; fails the test unless `run` throws VALIDATION_FAILED. */
function refusedFields(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('VALIDATION_FAILED');
    return ((error as DomainError).details.errors ?? []).map((fieldError) => fieldError.field);
  }
  throw new Error('expected a VALIDATION_FAILED error, nothing was thrown');
}

describe('device labels', () => {
  describe('normalizeName', () => {
    it.each([
      ['  Garage battery ', 'Garage battery'],
      ['Café', 'Café'],
      // e + combining acute: stored composed (NFC), so a search for "Café" finds it.
      ['Cafe\u0301', 'Café'],
      ['👨‍👩‍👧 home', '👨‍👩‍👧 home'],
      ['x'.repeat(64), 'x'.repeat(64)],
    ])('%j is stored as %j', (raw, stored) => {
      expect(normalizeName(raw)).toBe(stored);
    });

    it.each([[''], ['   '], ['x'.repeat(65)], ['a\u0000b'], ['a\nb'], ['a\u007fb'], ['a\u0085b'], ['a\u202eb'], ['a\u2028b'], ['a\ue000b'], ['a\u200bb']])('%j is no name', (raw) => {
      expect(normalizeName(raw)).toBeNull();
    });
  });

  describe('normalizeTag', () => {
    it('lower-cases and trims; the result always matches the stored pattern', () => {
      expect(normalizeTag(' Site-7 ')).toBe('site-7');
      fc.assert(
        fc.property(fc.string(), (raw) => {
          const tag = normalizeTag(raw);
          return tag === null || (TAG_PATTERN.test(tag) && normalizeTag(tag) === tag);
        }),
      );
    });

    it.each([[''], ['a b'], ['süd'], ['x'.repeat(33)], ['roof,site']])('%j is no tag', (raw) => {
      expect(normalizeTag(raw)).toBeNull();
    });
  });

  describe('parseLabelsPatch', () => {
    it('keeps only the keys given; tags become a sorted set', () => {
      expect(parseLabelsPatch({ name: ' Shed ' })).toEqual({ name: 'Shed' });
      expect(parseLabelsPatch({ name: null })).toEqual({ name: null });
      expect(parseLabelsPatch({ tags: ['b', 'A', 'a'] })).toEqual({ tags: ['a', 'b'] });
      expect(parseLabelsPatch({ tags: [] })).toEqual({ tags: [] });
    });

    it('counts distinct tags against the limit of 20', () => {
      const twenty = Array.from({ length: 20 }, (_, i) => `t${i}`);

      expect(parseLabelsPatch({ tags: [...twenty, ...twenty] }).tags).toHaveLength(20);
      expect(refusedFields(() => parseLabelsPatch({ tags: [...twenty, 't20'] }))).toEqual(['tags']);
    });

    it.each<[unknown, string[]]>([
      [null, ['(root)']],
      [[], ['(root)']],
      [{}, ['(root)']],
      [{ name: 1, tags: 'x' }, ['name', 'tags']],
      [{ name: '' }, ['name']],
      [{ tags: [null] }, ['tags']],
      [{ tags: null }, ['tags']],
      [{ label: 'x' }, ['label']],
    ])('%j is refused naming %j', (body, fields) => {
      expect(refusedFields(() => parseLabelsPatch(body))).toEqual(fields);
    });
  });
});
