import { DomainError } from '../../../shared/domain-error.js';

/** Same answer for an unknown e-mail and a wrong password, so accounts cannot be enumerated. */
export class InvalidLoginError extends DomainError {
  constructor() {
    super('INVALID_CREDENTIALS', 'unauthorized', 'The e-mail address or password is not valid.');
  }
}

export class InvalidVerificationTokenError extends DomainError {
  constructor() {
    super('INVALID_TOKEN', 'invalid', 'The verification token is unknown, used or expired.');
  }
}
