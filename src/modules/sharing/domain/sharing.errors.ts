import { DomainError } from '../../../shared/domain-error.js';

/** A viewer (who sees the device) asked to change it: refused without changing anything. */
export class ShareRoleError extends DomainError {
  constructor() {
    super('SHARE_ROLE', 'forbidden', 'This device is shared with you as a viewer: you may see it, not change it. Its owner can make you an installer.');
  }
}

export class TooManySharesError extends DomainError {
  constructor(limit: number) {
    super('TOO_MANY_SHARES', 'conflict', `A device may be shared with at most ${limit} addresses. Revoke one first.`);
  }
}
