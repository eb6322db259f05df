import { DomainError } from '../../../shared/domain-error.js';
import { COMMON_PASSWORDS_OF_ALLOWED_LENGTH } from './common-passwords.js';

export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 128;

/**
 * Of the ~49,000 most used passwords of zxcvbn-ts's common list (lower-cased there), those a signup
 * could choose: the length rule refuses the rest. Copied at build time (common-passwords.json) rather
 * than read from the package at start, which kept all 49,000 in memory for good (3 MB of heap).
 */
const COMMON_PASSWORDS = new Set(COMMON_PASSWORDS_OF_ALLOWED_LENGTH);

export class PasswordTooCommonError extends DomainError {
  /** `field`: the request's name for the password (`newPassword` in a password change). */
  constructor(field = 'password') {
    super(
      'PASSWORD_TOO_COMMON',
      'invalid',
      'This password is too easy to guess: it is one of the most used passwords, repeats or counts up one character, or contains the e-mail address. Choose another.',
      { errors: [{ field, message: `${field} is too common` }] },
    );
  }
}

/** Each character the same, or each one up or down by one from the last: aaaaaaaaaa, 0123456789, zyxwvutsrq. */
function isRepeatedOrSequential(password: string): boolean {
  const codes = [...password].map((character) => character.codePointAt(0)!);
  const steps = new Set(codes.slice(1).map((code, index) => code - codes[index]));
  return steps.size === 1 && [0, 1, -1].includes([...steps][0]);
}

/**
 * ADMIN_PASSWORD under the rule customers' passwords follow, checked before the service starts: the
 * problem to report (naming the variable, never the value), or null.
 */
export function adminPasswordProblem(email: string, password: string): string | null {
  try {
    assertGuessResistant(password, email);
    return null;
  } catch (error) {
    if (!(error instanceof PasswordTooCommonError)) throw error;
    return 'ADMIN_PASSWORD: too easy to guess (one of the most used passwords, one character repeated or counting up, or the e-mail address in it): choose another, as customers must';
  }
}

/**
 * NIST SP 800-63B §3.1.1.2: refuse passwords that are commonly used, repetitive or sequential, or
 * taken from the context (here the e-mail address). Length is checked with the request's shape.
 */
export function assertGuessResistant(password: string, email: string, field = 'password'): void {
  const lowered = password.toLowerCase();
  const localPart = email.toLowerCase().split('@')[0];
  const fromContext = lowered.includes(email.toLowerCase()) || (localPart.length >= 4 && lowered.includes(localPart));
  if (COMMON_PASSWORDS.has(lowered) || isRepeatedOrSequential(password) || fromContext) throw new PasswordTooCommonError(field);
}
