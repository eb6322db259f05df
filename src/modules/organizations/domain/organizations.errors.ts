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

export class OrganizationNotEmptyError extends DomainError {
  constructor(devices: number) {
    super('ORGANIZATION_NOT_EMPTY', 'conflict', `The organization owns ${devices} device(s): release them or have an administrator transfer them first.`);
  }
}

/** An account that alone owns organizations with devices: deleting it would leave them without an owner. */
export class SoleOwnerOfDevicesError extends DomainError {
  constructor(names: string[]) {
    super('LAST_OWNER', 'conflict', `You are the only owner of ${names.length === 1 ? 'an organization' : 'organizations'} that own devices (${names.join(', ')}): make another member owner, or release the devices, before deleting your account. Nothing was deleted.`);
  }
}

export class PersonalOrganizationError extends DomainError {
  constructor(what: string) {
    super('PERSONAL_ORGANIZATION', 'conflict', `Your personal organization belongs to your account: it ${what}. Create an organization for what you share with others.`);
  }
}
