import { pairsKey, parsePairs } from '../../../shared/database/change-feed.js';
import type { SqlRunner } from '../../../shared/database/sql.js';
import type { MyOrganization, Organization, OrganizationMember, OrganizationRole } from './organization.js';

/**
 * The ChangeFeed topic every change of who is a bound member of an organization is announced on,
 * at its commit, to every instance (the streams of the accounts concerned drop the organization's
 * devices, then read their memberships again). Key: entries `<userId> <organizationId>` joined by
 * commas; `*` for "reread every membership".
 */
export const MEMBERS_TOPIC = 'organization_members';

export interface MembershipChange {
  userId: string;
  organizationId: string;
}

export function membershipChangesKey(changes: MembershipChange[]): string {
  return pairsKey(changes.map((change) => [change.userId, change.organizationId] as const));
}

export function parseMembershipChanges(key: string): MembershipChange[] | '*' {
  const pairs = parsePairs(key);
  return pairs === '*' ? '*' : pairs.map(([userId, organizationId]) => ({ userId, organizationId }));
}

/** A page position: the last item's (time, id). */
export interface After {
  at: Date;
  id: string;
}

/**
 * One member's transaction on one organization, its row locked until commit: two owners cannot
 * both step down, nor a member be changed twice at once. `me` is the caller's membership.
 */
export interface OrganizationSession {
  tx: SqlRunner;
  me: MyOrganization;
  /** In a personal organization, the membership of its account (which cannot leave it or stop owning it); otherwise null. */
  personalAccountMemberId: string | null;
  /** Owner memberships, invitations included. */
  ownerCount(): Promise<number>;
  member(memberId: string): Promise<OrganizationMember | null>;
  memberByEmail(email: string): Promise<OrganizationMember | null>;
  /** Inserts the invitation, bound at once to a verified account with that address if there is one. */
  invite(member: OrganizationMember): Promise<void>;
  setRole(memberId: string, role: OrganizationRole): Promise<OrganizationMember>;
  setAlertEmails(memberId: string, alertEmails: boolean): Promise<OrganizationMember>;
  remove(memberId: string): Promise<void>;
  rename(name: string, at: Date): Promise<Organization>;
  /** Devices the organization owns. */
  deviceCount(): Promise<number>;
  delete(): Promise<void>;
}

/** The first owner of a new organization: the account that creates it, with its own address. */
export interface NewOwner {
  memberId: string;
  userId: string;
  role: 'owner';
  invitedAt: Date;
}

export abstract class OrganizationStore {
  /** The account's personal organization (its id is the account's), with the account as owner; nothing if it exists. */
  abstract createPersonal(tx: SqlRunner, account: { userId: string; email: string; at: Date }): Promise<void>;
  /** A new organization and its first owner, then `onStored` in the same transaction. */
  abstract create(organization: Organization, owner: NewOwner, onStored: (tx: SqlRunner) => Promise<void>): Promise<void>;
  /** The organizations the account is a member of (bound), oldest first. */
  abstract listMine(userId: string, limit: number, after: After | null): Promise<MyOrganization[]>;
  abstract findMine(userId: string, organizationId: string): Promise<MyOrganization | null>;
  abstract exists(organizationId: string): Promise<boolean>;
  abstract members(organizationId: string, limit: number, after: After | null): Promise<OrganizationMember[]>;
  /** Runs `work` in a transaction holding the organization's row; null when the account is not a member. */
  abstract withOrganization<T>(userId: string, organizationId: string, work: (session: OrganizationSession) => Promise<T>): Promise<T | null>;
  /** The accounts bound to the organization with one of these roles (and alert e-mails on, with `alertEmails`). */
  abstract memberAccounts(organizationId: string, roles: readonly OrganizationRole[], options?: { alertEmails?: true }): Promise<string[]>;
  /** The organizations the account is a bound member of, its personal one included. */
  abstract memberOrganizationsOf(userId: string): Promise<Set<string>>;
  /** An account verified its address: the invitations waiting for it start to count. */
  abstract bind(userId: string, email: string): Promise<number>;
  /**
   * Account deletion, in its transaction: the organizations it is the only owner of (none owns a
   * device: soleOwnerWithDevices first), its memberships and the invitations waiting for its
   * address. Its personal organization goes with the account's row.
   */
  abstract deleteOfUser(tx: SqlRunner, userId: string): Promise<void>;
  /** The names of the organizations that own devices and of which the account is the only owner. */
  abstract soleOwnerWithDevices(tx: SqlRunner, userId: string): Promise<string[]>;
}
