import { DomainError } from '../../../shared/domain-error.js';
import { ClaimCode } from './claim-code.js';

describe('ClaimCode', () => {
  it.each([
    ['ABCD-EFGH', 'ABCD-EFGH'],
    ['abcd-efgh', 'ABCD-EFGH'],
    ['QUICK-AMBER-FALCON', 'QUICK-AMBER-FALCON'],
    ['AB-CDEFGH', 'AB-CDEFGH'],
    ['a'.repeat(31) + '-' + 'b'.repeat(32), 'A'.repeat(31) + '-' + 'B'.repeat(32)],
  ])('accepts %j as %j', (raw, normalised) => {
    expect(ClaimCode.isWellFormed(raw)).toBe(true);
    expect(ClaimCode.parse(raw).value).toBe(normalised);
  });

  it.each([
    ['one group', 'ABCDEFGH'],
    ['fewer than 8 letters', 'AB-CD'],
    ['7 letters', 'ABC-DEFG'],
    ['a double hyphen', 'ABCD--EFGH'],
    ['a leading hyphen', '-ABCD-EFGH'],
    ['a trailing hyphen', 'ABCD-EFGH-'],
    ['a digit', 'ABCD-EFG1'],
    ['a space', 'ABCD EFGH'],
    ['65 characters', 'A'.repeat(32) + '-' + 'B'.repeat(32)],
    ['nothing', ''],
  ])('rejects %s (%j)', (_reason, raw) => {
    expect(ClaimCode.isWellFormed(raw)).toBe(false);
    expect(() => ClaimCode.parse(raw)).toThrow(DomainError);
    expect(() => ClaimCode.parse(raw)).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED', details: { errors: [expect.objectContaining({ field: 'claimCode' })] } }));
  });
});
