// common-passwords.json is generated from @zxcvbn-ts/language-common (MIT): its passwords-common
// list, kept where a password is at least PASSWORD_MIN_LENGTH (10) characters long, in the list's
// order (most used first). password-policy.spec.ts checks it against the installed package;
// regenerate when that fails. A JSON module, so the build copies it to dist/ with the code.
import list from './common-passwords.json' with { type: 'json' };

export const COMMON_PASSWORDS_OF_ALLOWED_LENGTH: readonly string[] = list;
