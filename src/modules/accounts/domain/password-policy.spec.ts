import { dictionary } from '@zxcvbn-ts/language-common';
import { COMMON_PASSWORDS_OF_ALLOWED_LENGTH } from './common-passwords.js';
import { assertGuessResistant, PASSWORD_MIN_LENGTH, PasswordTooCommonError } from './password-policy.js';

const EMAIL = 'ada.lovelace@example.com';

describe('assertGuessResistant', () => {
  it.each(['password123', '1234567890', 'qwertyuiop', 'Password123', 'QWERTYUIOP', 'iloveyou123'])('refuses %j, one of the most used passwords, in any case', (password) => {
    expect(() => assertGuessResistant(password, EMAIL)).toThrow(PasswordTooCommonError);
  });

  it.each(['aaaaaaaaaaaa', '0123456789', 'abcdefghijk', 'zyxwvutsrqpo', '9876543210', '!!!!!!!!!!'])('refuses %j, one character repeated or counted', (password) => {
    expect(() => assertGuessResistant(password, EMAIL)).toThrow(PasswordTooCommonError);
  });

  it.each(['ada.lovelace@example.com', 'ADA.LOVELACE2026', 'my-ada.lovelace-pw'])('refuses %j, built from the e-mail address', (password) => {
    expect(() => assertGuessResistant(password, EMAIL)).toThrow(PasswordTooCommonError);
  });

  it.each(['correct horse battery', 'pw-3f9a1c07e2b4d6a8', 'Tr0ub4dor&3-staple', 'abcdefghiZ', 'aaaaaaaaab'])('accepts %j', (password) => {
    expect(() => assertGuessResistant(password, EMAIL)).not.toThrow();
  });

  it('knows every password of zxcvbn-ts\'s common list that the length rule lets through, as the installed package has them', () => {
    const allowedLength = dictionary['passwords-common'].filter((password) => password.length >= PASSWORD_MIN_LENGTH);

    expect(COMMON_PASSWORDS_OF_ALLOWED_LENGTH).toEqual(allowedLength);
    for (const password of allowedLength) expect(() => assertGuessResistant(password, EMAIL)).toThrow(PasswordTooCommonError);
  });

  it('names the password field with the code PASSWORD_TOO_COMMON', () => {
    expect(() => assertGuessResistant('password123', EMAIL)).toThrow(
      expect.objectContaining({ code: 'PASSWORD_TOO_COMMON', kind: 'invalid', details: { errors: [{ field: 'password', message: 'password is too common' }] } }),
    );
  });

  it('does not take a short local part for context: ann@ does not forbid "annual"', () => {
    expect(() => assertGuessResistant('annual-report-pw', 'ann@example.com')).not.toThrow();
  });
});
