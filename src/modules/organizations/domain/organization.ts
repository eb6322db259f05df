/** What a member may do in an organization, each role all that the next one may and more. */
export const ORGANIZATION_ROLES = ['owner', 'admin', 'operator', 'viewer'] as const;
export type OrganizationRole = (typeof ORGANIZATION_ROLES)[number];

/** The name every account's personal organization starts with. */
export const PERSONAL_ORGANIZATION_NAME = 'Personal';

export interface Organization {
  organizationId: string;
  name: string;
  /** The organization every account has (its id is the account's): it cannot be deleted, transferred or left. */
  personal: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** An organization as one of its members sees it: with their role and their membership's id. */
export interface MyOrganization extends Organization {
  role: OrganizationRole;
  memberId: string;
}

/**
 * A membership: an e-mail address invited with a role. `userId` is null until an account with that
 * address is verified, and is never shown: no answer tells whether an address has an account.
 */
export interface OrganizationMember {
  memberId: string;
  organizationId: string;
  email: string;
  role: OrganizationRole;
  invitedAt: Date;
  /** The member's own choice of alert e-mails about the organization's devices (ALERTED_ROLES only are mailed). */
  alertEmails: boolean;
}

/** Owners and admins manage the organization: its name and its members (an owner's own membership excepted). */
export const mayAdminister = (role: OrganizationRole): boolean => role === 'owner' || role === 'admin';

/** Everyone but viewers works the organization's devices: claims them, configures them, sends commands, acknowledges alerts. */
export const mayOperate = (role: OrganizationRole): boolean => role !== 'viewer';

/** The roles whose members are mailed about the organization's devices (alerts, offline, failed updates), if their account wants alert e-mails. */
export const ALERTED_ROLES: readonly OrganizationRole[] = ['owner', 'admin', 'operator'];

/** Whether `actor` may give `to` to a member who has `from` (null: a new invitation). Owners are made and unmade by owners only. */
export const mayAssign = (actor: OrganizationRole, from: OrganizationRole | null, to: OrganizationRole): boolean =>
  mayAdminister(actor) && (actor === 'owner' || (from !== 'owner' && to !== 'owner'));
