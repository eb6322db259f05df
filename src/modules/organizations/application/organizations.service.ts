import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import type { SqlRunner } from '../../../shared/database/sql.js';
import { NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { AuditLog, type AuditAction, type AuditContext } from '../../audit/index.js';
import { ALERTED_ROLES, mayAdminister, mayAssign, mayOperate, type MyOrganization, type Organization, type OrganizationMember, type OrganizationRole } from '../domain/organization.js';
import { OrganizationStore, type After, type OrganizationSession } from '../domain/organization.store.js';
import { LastOwnerError, OrganizationNotEmptyError, OrganizationRoleError, PersonalOrganizationError, SoleOwnerOfDevicesError } from '../domain/organizations.errors.js';

/** Addresses are compared trimmed and lower-cased, as accounts store them. */
export const normalizeMemberEmail = (email: string): string => email.trim().toLowerCase();

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const notFound = () => new NotFoundError('You are a member of no organization with this id.');
const noMember = () => new NotFoundError('This organization has no member with this id.');
const notAdministrator = () => new OrganizationRoleError('Only owners and admins of the organization may do this.');
const notOwner = () => new OrganizationRoleError('Only owners of the organization may do this, or make and unmake owners.');

function afterOf(cursor: string | undefined): After | null {
  if (cursor === undefined) return null;
  const { ts, key } = decodeTimeCursor(cursor, (value) => UUID.test(value));
  return { at: ts, id: key };
}

function pageOf<T>(rows: T[], limit: number, position: (item: T) => [Date, string]): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit ? encodeTimeCursor(...position(last)) : null };
}

/**
 * Organizations and their members: every change goes through here (the one place the rules of the
 * roles live and the audit call goes), in a transaction holding the organization's row. Anyone who
 * is not a member gets the 404 of an organization that does not exist; no answer tells whether an
 * address has an account.
 */
@Injectable()
export class OrganizationsService {
  constructor(
    private readonly store: OrganizationStore,
    private readonly clock: Clock,
    private readonly auditLog: AuditLog,
  ) {}

  async create(userId: string, name: string, by: AuditContext): Promise<MyOrganization> {
    const now = this.clock.now();
    const organization: Organization = { organizationId: randomUUID(), name, personal: false, createdAt: now, updatedAt: now };
    const owner = { memberId: randomUUID(), userId, role: 'owner' as const, invitedAt: now };
    await this.store.create(organization, owner, (tx) => this.audit(tx, by, 'organization.created', organization.organizationId, now, { name }));
    return { ...organization, role: 'owner', memberId: owner.memberId };
  }

  async listMine(userId: string, limit: number, cursor?: string): Promise<Page<MyOrganization>> {
    const rows = await this.store.listMine(userId, limit + 1, afterOf(cursor));
    return pageOf(rows, limit, (item) => [item.createdAt, item.organizationId]);
  }

  async get(userId: string, organizationId: string): Promise<MyOrganization> {
    const organization = await this.store.findMine(userId, organizationId);
    if (!organization) throw notFound();
    return organization;
  }

  async rename(userId: string, organizationId: string, name: string, by: AuditContext): Promise<MyOrganization> {
    return this.changing(userId, organizationId, async (session) => {
      if (!mayAdminister(session.me.role)) throw notAdministrator();
      const now = this.clock.now();
      const renamed = await session.rename(name, now);
      await this.audit(session.tx, by, 'organization.changed', organizationId, now, { name });
      return { ...renamed, role: session.me.role, memberId: session.me.memberId };
    });
  }

  async delete(userId: string, organizationId: string, by: AuditContext): Promise<void> {
    await this.changing(userId, organizationId, async (session) => {
      if (session.me.role !== 'owner') throw notOwner();
      if (session.me.personal) throw new PersonalOrganizationError('cannot be deleted');
      const devices = await session.deviceCount();
      if (devices > 0) throw new OrganizationNotEmptyError(devices);
      await session.delete();
      await this.audit(session.tx, by, 'organization.deleted', organizationId, this.clock.now(), { name: session.me.name });
    });
  }

  /** Invites the address, or changes the role of its membership (`created: false`). */
  async invite(userId: string, organizationId: string, email: string, role: OrganizationRole, by: AuditContext): Promise<{ member: OrganizationMember; created: boolean }> {
    return this.changing(userId, organizationId, async (session) => {
      const normalized = normalizeMemberEmail(email);
      const existing = await session.memberByEmail(normalized);
      if (existing) return { member: await this.assign(session, existing, role, by), created: false };
      if (!mayAssign(session.me.role, null, role)) throw mayAdminister(session.me.role) ? notOwner() : notAdministrator();
      const now = this.clock.now();
      const member: OrganizationMember = { memberId: randomUUID(), organizationId, email: normalized, role, invitedAt: now, alertEmails: true };
      await session.invite(member);
      await this.audit(session.tx, by, 'organization.member_invited', organizationId, now, { memberId: member.memberId, email: normalized, role });
      return { member, created: true };
    });
  }

  async members(userId: string, organizationId: string, limit: number, cursor?: string): Promise<Page<OrganizationMember>> {
    const after = afterOf(cursor);
    await this.get(userId, organizationId);
    const rows = await this.store.members(organizationId, limit + 1, after);
    return pageOf(rows, limit, (item) => [item.invitedAt, item.memberId]);
  }

  /**
   * Changes a member's role (by the rules of the roles) and their alert e-mails (each member their
   * own only), both or neither in one transaction.
   */
  async changeMember(userId: string, organizationId: string, memberId: string, change: { role?: OrganizationRole; alertEmails?: boolean }, by: AuditContext): Promise<OrganizationMember> {
    return this.changing(userId, organizationId, async (session) => {
      let member = await session.member(memberId);
      if (!member) throw noMember();
      if (change.alertEmails !== undefined && member.memberId !== session.me.memberId) throw new OrganizationRoleError('Each member chooses their own alert e-mails: change only alertEmails of your own membership.');
      if (change.role !== undefined) member = await this.assign(session, member, change.role, by);
      if (change.alertEmails !== undefined && change.alertEmails !== member.alertEmails) {
        member = await session.setAlertEmails(member.memberId, change.alertEmails);
        await this.audit(session.tx, by, 'organization.member_changed', organizationId, this.clock.now(), { memberId, email: member.email, alertEmails: change.alertEmails });
      }
      return member;
    });
  }

  /** Removes a member: owners anyone, admins anyone but owners, and any member themself (leaving). */
  async remove(userId: string, organizationId: string, memberId: string, by: AuditContext): Promise<void> {
    await this.changing(userId, organizationId, async (session) => {
      const member = await session.member(memberId);
      if (!member) throw noMember();
      const leaving = member.memberId === session.me.memberId;
      if (!leaving && !mayAssign(session.me.role, member.role, 'viewer')) throw mayAdminister(session.me.role) ? notOwner() : notAdministrator();
      if (member.memberId === session.personalAccountMemberId) throw new PersonalOrganizationError('keeps its account as a member');
      if (member.role === 'owner' && (await session.ownerCount()) <= 1) throw new LastOwnerError();
      await session.remove(member.memberId);
      await this.audit(session.tx, by, 'organization.member_removed', organizationId, this.clock.now(), { memberId, email: member.email, left: leaving });
    });
  }

  /** Makes another member an owner and the caller an admin. */
  async transfer(userId: string, organizationId: string, memberId: string, by: AuditContext): Promise<MyOrganization> {
    return this.changing(userId, organizationId, async (session) => {
      if (session.me.role !== 'owner') throw notOwner();
      if (session.me.personal) throw new PersonalOrganizationError('cannot be transferred');
      if (memberId === session.me.memberId) throw new ValidationFailedError([{ field: 'memberId', message: 'memberId is your own membership: name the member who becomes owner' }]);
      const member = await session.member(memberId);
      if (!member) throw noMember();
      await session.setRole(member.memberId, 'owner');
      await session.setRole(session.me.memberId, 'admin');
      await this.audit(session.tx, by, 'organization.transferred', organizationId, this.clock.now(), { memberId, email: member.email });
      return { ...session.me, role: 'admin' };
    });
  }

  /**
   * The organization a claim by this account goes to: its personal one unless it names another, in
   * which it must be an operator at least (400 naming organizationId when it is no member).
   */
  async claimingOwner(userId: string, organizationId: string | undefined): Promise<string> {
    if (organizationId === undefined || organizationId === userId) return userId;
    const organization = await this.store.findMine(userId, organizationId);
    if (!organization) throw new ValidationFailedError([{ field: 'organizationId', message: 'organizationId is not an organization you are a member of' }]);
    if (!mayOperate(organization.role)) throw new OrganizationRoleError('Devices are claimed into an organization by its owners, admins and operators; you are a viewer there.');
    return organizationId;
  }

  /**
   * Whether the account acts as the owner of what `ownerId` owns: its own personal organization, or
   * one it is an owner or admin of (release a device, open its re-registration).
   */
  async actsAsOwner(userId: string, ownerId: string): Promise<boolean> {
    if (ownerId === userId) return true;
    const organization = await this.store.findMine(userId, ownerId);
    return organization !== null && mayAdminister(organization.role);
  }

  /** The organization, when the account is one of its owners or admins: 404 for a non-member, 403 ORGANIZATION_ROLE for another member. */
  async administered(userId: string, organizationId: string): Promise<MyOrganization> {
    const organization = await this.get(userId, organizationId);
    if (!mayAdminister(organization.role)) throw notAdministrator();
    return organization;
  }

  /**
   * That the account is an owner or admin of this organization, and that it is not its personal
   * one (whose integrations are the account's own): before another module manages what the
   * organization holds (its API keys, its webhooks). 404 for a non-member, as everywhere.
   */
  async administering(userId: string, organizationId: string, what: 'API keys' | 'webhooks'): Promise<void> {
    const organization = await this.administered(userId, organizationId);
    if (organization.personal) throw new PersonalOrganizationError(`holds no ${what} of its own: your account's are at /api/v1/user/${what.toLowerCase().replace(' ', '-')}`);
  }

  /** Whether an organization with this id exists (administrators' transfers). */
  exists(organizationId: string): Promise<boolean> {
    return this.store.exists(organizationId);
  }

  /** An account was created: its personal organization, in the account's transaction. */
  createPersonal(tx: SqlRunner, account: { userId: string; email: string; at: Date }): Promise<void> {
    return this.store.createPersonal(tx, { ...account, email: normalizeMemberEmail(account.email) });
  }

  /**
   * Whom to mail about what happens to the devices `ownerId` owns: the accounts of its owners,
   * admins and operators (ALERTED_ROLES; a personal organization's account among them) who keep
   * alert e-mails on for this organization. Each account's own preference (alert e-mails on, a
   * verified address) still decides too.
   */
  alertedAccountsOf(ownerId: string): Promise<string[]> {
    return this.store.memberAccounts(ownerId, ALERTED_ROLES, { alertEmails: true });
  }

  /** The accounts of the organization's owners and admins: whom to tell about what the organization holds (a webhook disabled). */
  administratorAccountsOf(organizationId: string): Promise<string[]> {
    return this.store.memberAccounts(organizationId, ['owner', 'admin']);
  }

  /** The organizations whose devices the account sees as a member (its personal one included): for its live streams. */
  memberOrganizationsOf(userId: string): Promise<Set<string>> {
    return this.store.memberOrganizationsOf(userId);
  }

  /** An account verified its address: the invitations waiting for it start to count. */
  async bindVerified(userId: string, email: string): Promise<void> {
    await this.store.bind(userId, normalizeMemberEmail(email));
  }

  /** Account deletion, in its transaction: refused (409 LAST_OWNER) while the account alone owns an organization with devices. */
  async removeAllOf(tx: SqlRunner, userId: string): Promise<void> {
    const blocking = await this.store.soleOwnerWithDevices(tx, userId);
    if (blocking.length > 0) throw new SoleOwnerOfDevicesError(blocking);
    await this.store.deleteOfUser(tx, userId);
  }

  private async assign(session: OrganizationSession, member: OrganizationMember, role: OrganizationRole, by: AuditContext): Promise<OrganizationMember> {
    if (!mayAssign(session.me.role, member.role, role)) throw mayAdminister(session.me.role) ? notOwner() : notAdministrator();
    if (member.role === role) return member;
    if (member.memberId === session.personalAccountMemberId) throw new PersonalOrganizationError('keeps its account as its owner');
    if (member.role === 'owner' && (await session.ownerCount()) <= 1) throw new LastOwnerError();
    const changed = await session.setRole(member.memberId, role);
    await this.audit(session.tx, by, 'organization.member_changed', session.me.organizationId, this.clock.now(), { memberId: member.memberId, email: member.email, role });
    return changed;
  }

  private async changing<T>(userId: string, organizationId: string, work: (session: OrganizationSession) => Promise<T>): Promise<T> {
    const result = await this.store.withOrganization(userId, organizationId, async (session) => ({ value: await work(session) }));
    if (result === null) throw notFound();
    return result.value;
  }

  private audit(tx: SqlRunner, by: AuditContext, action: AuditAction, organizationId: string, at: Date, detail: Record<string, unknown>): Promise<void> {
    return this.auditLog.record(tx, { by, action, target: `organization:${organizationId}`, deviceId: null, ownerId: organizationId, at, detail });
  }
}
