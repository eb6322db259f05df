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

/** Unknown, used, replaced by a newer link, or expired: one answer, so a guess learns nothing. */
export class InvalidPasswordResetTokenError extends DomainError {
  constructor() {
    super('INVALID_TOKEN', 'invalid', 'The password reset link is unknown, used, replaced by a newer one or expired. Ask for a new one.');
  }
}

/**
 * The password that confirms a change on the account (password change, deletion) is wrong. A 403,
 * not a 401: the caller's token is fine, and a client must not take this for a lost session.
 */
export class WrongPasswordError extends DomainError {
  constructor() {
    super('INVALID_CREDENTIALS', 'forbidden', 'The password is not valid.');
  }
}

/** The administrator's account comes from ADMIN_EMAIL and would be made again at the next start. */
export class AdministratorNotDeletableError extends DomainError {
  constructor() {
    super('FORBIDDEN', 'forbidden', 'An administrator account cannot delete itself: it is configured by ADMIN_EMAIL.');
  }
}
