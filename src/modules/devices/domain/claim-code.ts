import { DomainError } from '../../../shared/domain-error.js';

/**
 * A claim code as printed on the gateway's label: letters in at least two groups joined by single
 * hyphens, at least eight letters. Lower case is accepted and normalised to upper case, so the
 * hash is computed over one canonical form.
 */
export class ClaimCode {
  static readonly PATTERN = /^[A-Za-z]+(-[A-Za-z]+)+$/;
  static readonly MIN_LETTERS = 8;
  static readonly MAX_LENGTH = 64;

  private constructor(readonly value: string) {}

  static isWellFormed(raw: string): boolean {
    return raw.length <= ClaimCode.MAX_LENGTH && ClaimCode.PATTERN.test(raw) && raw.replaceAll('-', '').length >= ClaimCode.MIN_LETTERS;
  }

  static parse(raw: string): ClaimCode {
    if (!ClaimCode.isWellFormed(raw)) {
      throw new DomainError('VALIDATION_FAILED', 'invalid', 'The claim code is not well-formed.', {
        errors: [{ field: 'claimCode', message: 'claimCode must be at least 8 letters in two or more groups joined by hyphens' }],
      });
    }
    return new ClaimCode(raw.toUpperCase());
  }
}
