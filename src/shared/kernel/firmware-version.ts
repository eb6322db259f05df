import { DomainError } from '../domain-error.js';

/** Dotted numeric version (two to four parts) compared part by part as numbers: 0.1.10 > 0.1.4. */
export class FirmwareVersion {
  static readonly PATTERN = /^\d{1,9}(\.\d{1,9}){1,3}$/;
  /** The first firmware that must send a claim code at registration (seed section 9). */
  static readonly FIRST_WITH_CLAIM_CODE = FirmwareVersion.parse('0.1.4');

  private constructor(
    readonly value: string,
    private readonly parts: number[],
  ) {}

  static parse(value: string): FirmwareVersion {
    if (!FirmwareVersion.PATTERN.test(value)) {
      throw new DomainError('VALIDATION_FAILED', 'invalid', `"${value.slice(0, 40)}" is not a dotted numeric version.`, {
        errors: [{ field: 'firmwareVersion', message: 'firmwareVersion must be a dotted numeric version such as 0.1.4' }],
      });
    }
    return new FirmwareVersion(value, value.split('.').map(Number));
  }

  compareTo(other: FirmwareVersion): number {
    const length = Math.max(this.parts.length, other.parts.length);
    for (let i = 0; i < length; i++) {
      const difference = (this.parts[i] ?? 0) - (other.parts[i] ?? 0);
      if (difference !== 0) return Math.sign(difference);
    }
    return 0;
  }

  isAtLeast(other: FirmwareVersion): boolean {
    return this.compareTo(other) >= 0;
  }

  requiresClaimCode(): boolean {
    return this.isAtLeast(FirmwareVersion.FIRST_WITH_CLAIM_CODE);
  }

  toString(): string {
    return this.value;
  }
}
