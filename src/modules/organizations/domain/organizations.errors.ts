import { DomainError } from '../../../shared/domain-error.js';

/** A member asked for something their role does not allow: refused without changing anything. */
export class OrganizationRoleError extends DomainError {
  constructor(detail: string) {
    super('ORGANIZATION_ROLE', 'forbidden', detail);
  }
}

export class LastOwnerError extends DomainError {
  constructor() {
    super('LAST_OWNER', 'conflict', 'An organization keeps at least one owner: make another member owner first (or transfer the organization), then leave or change this role.');
  }
}

export class PersonalOrganizationError extends DomainError {
  constructor(what: string) {
    super('PERSONAL_ORGANIZATION', 'conflict', `Your personal organization belongs to your account: it ${what}. Create an organization for what you share with others.`);
  }
}
