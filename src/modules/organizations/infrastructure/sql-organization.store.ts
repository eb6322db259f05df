import { Injectable } from '@nestjs/common';
import { CHANGE_CHANNEL, ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import { ACCOUNT_SUMMARIES } from '../../accounts/sql-api.js';
import { DEVICE_OWNERS } from '../../devices/sql-api.js';
import { PERSONAL_ORGANIZATION_NAME, type MyOrganization, type Organization, type OrganizationMember, type OrganizationRole } from '../domain/organization.js';
import {
  MEMBERS_TOPIC,
  membershipChangesKey,
  OrganizationStore,
  type After,
  type MembershipChange,
  type NewOwner,
  type OrganizationSession,
} from '../domain/organization.store.js';

interface OrganizationRow {
  organization_id: string;
  name: string;
  personal: boolean;
  created_at: Date;
  updated_at: Date;
}

interface MemberRow {
  member_id: string;
  organization_id: string;
  email: string;
  role: OrganizationRole;
  invited_at: Date;
  alert_emails: boolean;
}

const ORGANIZATION_COLUMNS = 'o.organization_id, o.name, o.personal_of IS NOT NULL AS personal, o.created_at, o.updated_at';
const MEMBER_COLUMNS = 'member_id, organization_id, email, role, invited_at';
/** What a member's row answers: the columns an invitation sets, and the member's own preference. */
const MEMBER_READ = `${MEMBER_COLUMNS}, alert_emails`;

const toOrganization = (row: OrganizationRow): Organization => ({
  organizationId: row.organization_id,
  name: row.name,
  personal: row.personal,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const toMine = (row: OrganizationRow & { role: OrganizationRole; member_id: string }): MyOrganization => ({ ...toOrganization(row), role: row.role, memberId: row.member_id });

const toMember = (row: MemberRow): OrganizationMember => ({
  memberId: row.member_id,
  organizationId: row.organization_id,
  email: row.email,
  role: row.role,
  invitedAt: row.invited_at,
  alertEmails: row.alert_emails,
});

/** The caller's organizations: their bound memberships joined to the organizations. */
const MINE = `SELECT ${ORGANIZATION_COLUMNS}, m.role, m.member_id FROM organization_members m JOIN organizations o ON o.organization_id = m.organization_id WHERE m.user_id = $1`;

type Bound = { user_id: string | null; organization_id: string };

const changesOf = (rows: Bound[]): MembershipChange[] => rows.flatMap((row) => (row.user_id === null ? [] : [{ userId: row.user_id, organizationId: row.organization_id }]));

/** Tells every instance (this one too, through the feed's own connection), at commit, whose memberships changed. */
async function announce(tx: SqlRunner, changes: MembershipChange[]): Promise<void> {
  if (changes.length > 0) await tx.rows('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, `${MEMBERS_TOPIC}:${membershipChangesKey(changes)}`]);
}

@Injectable()
export class SqlOrganizationStore extends OrganizationStore {
  constructor(
    private readonly sql: Sql,
    private readonly feed: ChangeFeed,
  ) {
    super();
  }

  /** After a commit of this instance: its own streams hear of it before the answer goes out, not only when the notification comes back. */
  private committed(changes: MembershipChange[]): void {
    if (changes.length > 0) this.feed.changed(MEMBERS_TOPIC, membershipChangesKey(changes));
  }

  async memberAccounts(organizationId: string, roles: readonly OrganizationRole[], options: { alertEmails?: true } = {}): Promise<string[]> {
    const rows = await this.sql.rows<{ user_id: string }>(
      `SELECT user_id FROM organization_members WHERE organization_id = $1 AND user_id IS NOT NULL AND role = ANY($2::text[]) ${options.alertEmails ? 'AND alert_emails' : ''}
        ORDER BY invited_at, member_id`,
      [organizationId, roles],
    );
    return rows.map((row) => row.user_id);
  }

  async memberOrganizationsOf(userId: string): Promise<Set<string>> {
    const rows = await this.sql.rows<{ organization_id: string }>('SELECT organization_id FROM organization_members WHERE user_id = $1', [userId]);
    return new Set(rows.map((row) => row.organization_id));
  }

  async createPersonal(tx: SqlRunner, account: { userId: string; email: string; at: Date }): Promise<void> {
    const created = await tx.rows(
      `INSERT INTO organizations (organization_id, name, personal_of, created_at, updated_at) VALUES ($1, $2, $1, $3, $3) ON CONFLICT DO NOTHING RETURNING organization_id`,
      [account.userId, PERSONAL_ORGANIZATION_NAME, account.at],
    );
    if (created.length === 0) return;
    await tx.rows(`INSERT INTO organization_members (${MEMBER_COLUMNS}, user_id) VALUES (gen_random_uuid(), $1, $2, 'owner', $3, $1)`, [account.userId, account.email, account.at]);
  }

  async create(organization: Organization, owner: NewOwner, onStored: (tx: SqlRunner) => Promise<void>): Promise<void> {
    await this.sql.transaction(async (tx) => {
      await tx.rows('INSERT INTO organizations (organization_id, name, personal_of, created_at, updated_at) VALUES ($1, $2, NULL, $3, $4)', [
        organization.organizationId,
        organization.name,
        organization.createdAt,
        organization.updatedAt,
      ]);
      // The owner's address as the account has it: the membership is the account's own.
      await tx.rows(
        `INSERT INTO organization_members (${MEMBER_COLUMNS}, user_id)
         SELECT $1, $2, email, $3, $4, user_id FROM ${ACCOUNT_SUMMARIES} WHERE user_id = $5`,
        [owner.memberId, organization.organizationId, owner.role, owner.invitedAt, owner.userId],
      );
      await onStored(tx);
    });
  }

  async listMine(userId: string, limit: number, after: After | null): Promise<MyOrganization[]> {
    const rows = await this.sql.rows<OrganizationRow & { role: OrganizationRole; member_id: string }>(
      `${MINE} AND ($2::timestamptz IS NULL OR (o.created_at, o.organization_id) > ($2::timestamptz, $3::uuid)) ORDER BY o.created_at, o.organization_id LIMIT $4`,
      [userId, after?.at ?? null, after?.id ?? null, limit],
    );
    return rows.map(toMine);
  }

  async findMine(userId: string, organizationId: string): Promise<MyOrganization | null> {
    const [row] = await this.sql.rows<OrganizationRow & { role: OrganizationRole; member_id: string }>(`${MINE} AND m.organization_id = $2`, [userId, organizationId]);
    return row ? toMine(row) : null;
  }

  async exists(organizationId: string): Promise<boolean> {
    const rows = await this.sql.rows('SELECT 1 FROM organizations WHERE organization_id = $1', [organizationId]);
    return rows.length > 0;
  }

  async members(organizationId: string, limit: number, after: After | null): Promise<OrganizationMember[]> {
    const rows = await this.sql.rows<MemberRow>(
      `SELECT ${MEMBER_READ} FROM organization_members
        WHERE organization_id = $1 AND ($2::timestamptz IS NULL OR (invited_at, member_id) > ($2::timestamptz, $3::uuid))
        ORDER BY invited_at, member_id LIMIT $4`,
      [organizationId, after?.at ?? null, after?.id ?? null, limit],
    );
    return rows.map(toMember);
  }

  async withOrganization<T>(userId: string, organizationId: string, work: (session: OrganizationSession) => Promise<T>): Promise<T | null> {
    const changes: MembershipChange[] = [];
    const result = await this.sql.transaction(async (tx) => {
      const [locked] = await tx.rows('SELECT 1 FROM organizations WHERE organization_id = $1 FOR UPDATE', [organizationId]);
      if (!locked) return null;
      const [mine] = await tx.rows<OrganizationRow & { role: OrganizationRole; member_id: string }>(`${MINE} AND m.organization_id = $2`, [userId, organizationId]);
      if (!mine) return null;
      const memberWhere = async (where: string, value: string) => {
        const [row] = await tx.rows<MemberRow>(`SELECT ${MEMBER_READ} FROM organization_members WHERE organization_id = $1 AND ${where} = $2`, [organizationId, value]);
        return row ? toMember(row) : null;
      };
      const [account] = mine.personal ? await tx.rows<{ member_id: string }>('SELECT member_id FROM organization_members WHERE organization_id = $1 AND user_id = $1', [organizationId]) : [];
      const session: OrganizationSession = {
        tx,
        me: toMine(mine),
        personalAccountMemberId: account?.member_id ?? null,
        ownerCount: async () => {
          const [{ count }] = await tx.rows<{ count: number }>("SELECT count(*)::int AS count FROM organization_members WHERE organization_id = $1 AND role = 'owner'", [organizationId]);
          return count;
        },
        member: (memberId) => memberWhere('member_id', memberId),
        memberByEmail: (email) => memberWhere('email', email),
        invite: async (member) => {
          const inserted = await tx.rows<Bound>(
            `INSERT INTO organization_members (${MEMBER_COLUMNS}, user_id)
             VALUES ($1, $2, $3::varchar, $4, $5, (SELECT user_id FROM ${ACCOUNT_SUMMARIES} WHERE email = $3::varchar AND email_verified))
             RETURNING user_id, organization_id`,
            [member.memberId, organizationId, member.email, member.role, member.invitedAt],
          );
          changes.push(...changesOf(inserted));
        },
        setRole: async (memberId, role) => {
          const [row] = await tx.rows<MemberRow>(`UPDATE organization_members SET role = $3 WHERE organization_id = $1 AND member_id = $2 RETURNING ${MEMBER_READ}`, [organizationId, memberId, role]);
          return toMember(row);
        },
        setAlertEmails: async (memberId, alertEmails) => {
          const [row] = await tx.rows<MemberRow>(`UPDATE organization_members SET alert_emails = $3 WHERE organization_id = $1 AND member_id = $2 RETURNING ${MEMBER_READ}`, [
            organizationId,
            memberId,
            alertEmails,
          ]);
          return toMember(row);
        },
        remove: async (memberId) => {
          const removed = await tx.rows<Bound>('DELETE FROM organization_members WHERE organization_id = $1 AND member_id = $2 RETURNING user_id, organization_id', [organizationId, memberId]);
          changes.push(...changesOf(removed));
        },
        rename: async (name, at) => {
          const [row] = await tx.rows<OrganizationRow>(`UPDATE organizations o SET name = $2, updated_at = $3 WHERE organization_id = $1 RETURNING ${ORGANIZATION_COLUMNS}`, [organizationId, name, at]);
          return toOrganization(row);
        },
        deviceCount: async () => {
          const [{ count }] = await tx.rows<{ count: number }>(`SELECT count(*)::int AS count FROM ${DEVICE_OWNERS} WHERE owner_id = $1`, [organizationId]);
          return count;
        },
        delete: async () => {
          const removed = await tx.rows<Bound>('DELETE FROM organization_members WHERE organization_id = $1 RETURNING user_id, organization_id', [organizationId]);
          changes.push(...changesOf(removed));
          await tx.rows('DELETE FROM organizations WHERE organization_id = $1', [organizationId]);
        },
      };
      const done = await work(session);
      await announce(tx, changes);
      return done;
    });
    this.committed(changes);
    return result;
  }

  async bind(userId: string, email: string): Promise<number> {
    const bound = await this.sql.transaction(async (tx) => {
      const rows = await tx.rows<Bound>('UPDATE organization_members SET user_id = $1 WHERE email = $2 AND user_id IS NULL RETURNING user_id, organization_id', [userId, email]);
      await announce(tx, changesOf(rows));
      return rows;
    });
    this.committed(changesOf(bound));
    return bound.length;
  }

  async soleOwnerWithDevices(tx: SqlRunner, userId: string): Promise<string[]> {
    const rows = await tx.rows<{ name: string }>(
      `SELECT o.name FROM organizations o
        WHERE o.personal_of IS NULL
          AND EXISTS (SELECT 1 FROM organization_members m WHERE m.organization_id = o.organization_id AND m.user_id = $1 AND m.role = 'owner')
          AND NOT EXISTS (SELECT 1 FROM organization_members m WHERE m.organization_id = o.organization_id AND m.role = 'owner' AND m.user_id IS DISTINCT FROM $1)
          AND EXISTS (SELECT 1 FROM ${DEVICE_OWNERS} d WHERE d.owner_id = o.organization_id)
        ORDER BY o.name`,
      [userId],
    );
    return rows.map((row) => row.name);
  }

  async deleteOfUser(tx: SqlRunner, userId: string): Promise<void> {
    // Every organization where no owner would be left (invitations as owner count); the personal
    // one goes with the account's row (personal_of, ON DELETE CASCADE).
    await tx.rows(
      `DELETE FROM organizations o
        WHERE (o.personal_of IS NULL
               AND EXISTS (SELECT 1 FROM organization_members m WHERE m.organization_id = o.organization_id AND m.user_id = $1 AND m.role = 'owner')
               AND NOT EXISTS (SELECT 1 FROM organization_members m WHERE m.organization_id = o.organization_id AND m.role = 'owner' AND m.user_id IS DISTINCT FROM $1))`,
      [userId],
    );
    await tx.rows(
      `DELETE FROM organization_members
        WHERE user_id = $1 OR (user_id IS NULL AND email = (SELECT email FROM ${ACCOUNT_SUMMARIES} WHERE user_id = $1))`,
      [userId],
    );
  }
}
