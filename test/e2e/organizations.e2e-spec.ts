import { randomBytes } from 'node:crypto';
import { ADMIN_SETTINGS, CUSTOMER_PASSWORD, aCustomer, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { bearer } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem, fieldsOf, type Problem } from '../support/problems.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';

/*
 * Organizations: /api/v1/organizations and its members and transfer routes.
 *
 * - every account (signed up, and the administrator) has a personal organization it owns;
 * - creating, listing (the caller's own, oldest first, a page at a time), reading, renaming and
 *   deleting an organization, with the caller's role and membership id in each answer;
 * - inviting by e-mail address: bound at once to a verified account, or once the address's account
 *   is verified; the answer never tells whether the address has an account;
 * - listing members, changing roles, removing members and leaving, transferring ownership;
 * - every role boundary: a viewer or an operator manages nothing, an admin cannot make, change or
 *   remove an owner nor delete or transfer, the last owner cannot leave or be demoted, the personal
 *   organization cannot be deleted, transferred or left; a non-member is told 404 as for an
 *   unknown id; each refusal leaves the organization's rows as they were;
 * - deleting an account removes its memberships and its personal organization.
 */

type Who = { headers: { authorization: string } };
type Role = 'owner' | 'admin' | 'operator' | 'viewer';

/**
 * An organization's rows as stored (tables `organizations` and `organization_members`). A personal
 * organization names its account in `personal_of` (null for any other).
 */
interface OrganizationRow {
  organization_id: string;
  name: string;
  personal_of: string | null;
  created_at: Date;
  updated_at: Date;
}
interface MemberRow {
  member_id: string;
  organization_id: string;
  email: string;
  user_id: string | null;
  role: Role;
  invited_at: Date;
}

const PUBLIC_BASE_URL = 'https://dash.example';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const MEMBER_KEYS = ['alertEmails', 'email', 'invitedAt', 'memberId', 'role'];

/** An address no account has (yet). */
const anAddress = (prefix = 'invitee') => `${prefix}-${randomBytes(4).toString('hex')}@example.com`;

/** The parts of a problem that must not tell one refusal from another (requestId and instance differ per call). */
function comparable(problem: Problem): Omit<Problem, 'requestId' | 'instance'> {
  const { requestId: _requestId, instance: _instance, ...rest } = problem;
  return rest;
}

describe('organizations', () => {
  let t: TestApp;
  let sink: SmtpSink;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ ...ADMIN_SETTINGS, SMTP_URL: sink.url, PUBLIC_BASE_URL });
  });
  afterAll(async () => {
    try {
      await t?.close();
    } finally {
      await sink?.close();
    }
  });

  // The routes, through the generated client.
  const create = (who: Who | undefined, body: { name: string }) => t.api.POST('/api/v1/organizations', { body, headers: who?.headers });
  const list = (who: Who | undefined, query: { limit?: number; cursor?: string } = {}) => t.api.GET('/api/v1/organizations', { params: { query }, headers: who?.headers });
  const read = (who: Who, organizationId: string) => t.api.GET('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } }, headers: who.headers });
  const rename = (who: Who, organizationId: string, name: string) =>
    t.api.PATCH('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } }, body: { name }, headers: who.headers });
  const destroy = (who: Who, organizationId: string) => t.api.DELETE('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } }, headers: who.headers });
  const invite = (who: Who, organizationId: string, body: { email: string; role: Role }) =>
    t.api.POST('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, body, headers: who.headers });
  const members = (who: Who, organizationId: string, query: { limit?: number; cursor?: string } = {}) =>
    t.api.GET('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId }, query }, headers: who.headers });
  const changeRole = (who: Who, organizationId: string, memberId: string, role: Role) =>
    t.api.PATCH('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId } }, body: { role }, headers: who.headers });
  const removeMember = (who: Who, organizationId: string, memberId: string) =>
    t.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId } }, headers: who.headers });
  const transfer = (who: Who, organizationId: string, memberId: string) =>
    t.api.POST('/api/v1/organizations/{organizationId}/transfer', { params: { path: { organizationId } }, body: { memberId }, headers: who.headers });

  type Organization = NonNullable<Awaited<ReturnType<typeof create>>['data']>;
  type Member = NonNullable<Awaited<ReturnType<typeof invite>>['data']>;

  /** The caller's organizations, all of them (one page of 100). */
  async function organizationsOf(who: Who): Promise<Organization[]> {
    const { data, response } = await list(who, { limit: 100 });
    expect(response.status).toBe(200);
    return data!.items;
  }

  async function personalOf(who: Who): Promise<Organization> {
    const personal = (await organizationsOf(who)).filter((organization) => organization.personal);
    expect(personal).toHaveLength(1);
    return personal[0];
  }

  async function anOrganization(owner: Who, name = 'Team'): Promise<Organization> {
    const { data, response } = await create(owner, { name });
    expect(response.status).toBe(201);
    return data!;
  }

  /** Invites `email` with `role` (expecting 201) and returns the membership's id. */
  async function invited(by: Who, organizationId: string, email: string, role: Role): Promise<string> {
    const { data, response } = await invite(by, organizationId, { email, role });
    expect(response.status).toBe(201);
    return data!.memberId;
  }

  async function membersOf(who: Who, organizationId: string): Promise<Member[]> {
    const { data, response } = await members(who, organizationId, { limit: 100 });
    expect(response.status).toBe(200);
    return data!.items;
  }

  interface Team {
    organizationId: string;
    owner: SignedIn;
    admin: SignedIn;
    operator: SignedIn;
    viewer: SignedIn;
    /** Each member's membership id, by role. */
    memberIds: Record<Role, string>;
    /** A verified customer who is no member. */
    stranger: SignedIn;
  }

  /** An organization with one verified account in each role (invited in the order admin, operator, viewer), and a stranger. */
  async function aTeam(name = 'Team'): Promise<Team> {
    const [owner, admin, operator, viewer, stranger] = await Promise.all([aCustomer(t), aCustomer(t), aCustomer(t), aCustomer(t), aCustomer(t)]);
    const organization = await anOrganization(owner, name);
    const { organizationId } = organization;
    const memberIds: Record<Role, string> = {
      owner: organization.memberId,
      admin: await invited(owner, organizationId, admin.email, 'admin'),
      operator: await invited(owner, organizationId, operator.email, 'operator'),
      viewer: await invited(owner, organizationId, viewer.email, 'viewer'),
    };
    return { organizationId, owner, admin, operator, viewer, memberIds, stranger };
  }

  async function organizationRows(organizationId: string): Promise<OrganizationRow[]> {
    return (await t.db.query<OrganizationRow>('SELECT organization_id, name, personal_of, created_at, updated_at FROM organizations WHERE organization_id = $1', [organizationId])).rows;
  }

  async function memberRows(organizationId: string): Promise<MemberRow[]> {
    return (
      await t.db.query<MemberRow>(
        'SELECT member_id, organization_id, email, user_id, role, invited_at FROM organization_members WHERE organization_id = $1 ORDER BY invited_at, member_id',
        [organizationId],
      )
    ).rows;
  }

  /** Everything stored about an organization: a refusal must leave it as it was. */
  async function stateOf(organizationId: string): Promise<{ organization: OrganizationRow[]; members: MemberRow[] }> {
    return { organization: await organizationRows(organizationId), members: await memberRows(organizationId) };
  }

  const roleOf = async (organizationId: string, memberId: string) => (await memberRows(organizationId)).find((row) => row.member_id === memberId)?.role;
  const listedIds = async (who: Who) => (await organizationsOf(who)).map((organization) => organization.organizationId);

  /** The link token of the next verification mail to `email`, as the link carries it. */
  async function verificationTokenFor(email: string): Promise<string> {
    const mail = await sink.waitForMessage(email);
    const token = /verify-email\?token=(\S+)/.exec(mail.text)?.[1];
    expect(token).toBeDefined();
    return decodeURIComponent(token!);
  }

  async function verify(email: string): Promise<void> {
    const { response } = await t.api.POST('/api/v1/auth/verify-email', { body: { token: await verificationTokenFor(email) } });
    expect(response.status).toBe(200);
  }

  describe('the personal organization', () => {
    it('a signed-up account has one: "Personal", owned by it, listed first, with the account as its only member', async () => {
      const customer = await aCustomer(t);
      const { data, response } = await list(customer);
      expect(response.status).toBe(200);
      expect(data).toEqual({
        items: [
          {
            organizationId: expect.stringMatching(UUID),
            name: 'Personal',
            personal: true,
            role: 'owner',
            memberId: expect.stringMatching(UUID),
            createdAt: expect.any(String),
            updatedAt: expect.any(String),
          },
        ],
        nextCursor: null,
      });
      const personal = data!.items[0];
      expect((await read(customer, personal.organizationId)).data).toEqual(personal);
      expect((await members(customer, personal.organizationId)).data).toEqual({
        items: [{ memberId: personal.memberId, email: customer.email, role: 'owner', invitedAt: expect.any(String), alertEmails: true }],
        nextCursor: null,
      });
      expect(await organizationRows(personal.organizationId)).toEqual([expect.objectContaining({ name: 'Personal', personal_of: customer.userId })]);
      expect(await memberRows(personal.organizationId)).toEqual([
        expect.objectContaining({ member_id: personal.memberId, email: customer.email, user_id: customer.userId, role: 'owner' }),
      ]);
    });

    it('the administrator has one too', async () => {
      const admin = await anAdmin(t);
      const personal = await personalOf(admin);
      expect(personal).toMatchObject({ name: 'Personal', personal: true, role: 'owner' });
      expect(await membersOf(admin, personal.organizationId)).toEqual([{ memberId: personal.memberId, email: admin.email, role: 'owner', invitedAt: expect.any(String), alertEmails: true }]);
      expect(await memberRows(personal.organizationId)).toEqual([expect.objectContaining({ user_id: admin.userId, role: 'owner' })]);
      expect(await organizationRows(personal.organizationId)).toEqual([expect.objectContaining({ name: 'Personal', personal_of: admin.userId })]);
    });

    it('cannot be deleted: 409 PERSONAL_ORGANIZATION, and it stays', async () => {
      const customer = await aCustomer(t);
      const personal = await personalOf(customer);
      const before = await stateOf(personal.organizationId);
      expectProblem(await destroy(customer, personal.organizationId), 409, 'PERSONAL_ORGANIZATION');
      expect(await stateOf(personal.organizationId)).toEqual(before);
      expect((await read(customer, personal.organizationId)).response.status).toBe(200);
    });

    it('cannot be transferred: 409 PERSONAL_ORGANIZATION, even to a member it has', async () => {
      const [customer, friend] = await Promise.all([aCustomer(t), aCustomer(t)]);
      const personal = await personalOf(customer);
      const friendId = await invited(customer, personal.organizationId, friend.email, 'admin');
      const before = await stateOf(personal.organizationId);
      expectProblem(await transfer(customer, personal.organizationId, friendId), 409, 'PERSONAL_ORGANIZATION');
      expect(await stateOf(personal.organizationId)).toEqual(before);
      expect(await personalOf(customer)).toMatchObject({ organizationId: personal.organizationId, role: 'owner' });
    });

    it('its account cannot leave it, nor be removed by an admin of it: 409 PERSONAL_ORGANIZATION', async () => {
      const [customer, friend] = await Promise.all([aCustomer(t), aCustomer(t)]);
      const personal = await personalOf(customer);
      await invited(customer, personal.organizationId, friend.email, 'admin');
      const before = await stateOf(personal.organizationId);
      expectProblem(await removeMember(customer, personal.organizationId, personal.memberId), 409, 'PERSONAL_ORGANIZATION');
      // An admin may not remove an owner at all; whichever rule answers, it is a refusal that changes nothing.
      const byAdmin = await removeMember(friend, personal.organizationId, personal.memberId);
      expect([403, 409]).toContain(byAdmin.response.status);
      expect(await stateOf(personal.organizationId)).toEqual(before);
      expect(await personalOf(customer)).toEqual(personal);
    });
  });

  describe('creating, listing and reading', () => {
    it('POST creates an organization the caller owns: 201 with its role and membership, stored, name trimmed', async () => {
      const owner = await aCustomer(t);
      const { data, response } = await create(owner, { name: '  Acme Batteries  ' });
      expect(response.status).toBe(201);
      expect(data).toEqual({
        organizationId: expect.stringMatching(UUID),
        name: 'Acme Batteries',
        personal: false,
        role: 'owner',
        memberId: expect.stringMatching(UUID),
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(await organizationRows(data!.organizationId)).toEqual([expect.objectContaining({ organization_id: data!.organizationId, name: 'Acme Batteries', personal_of: null })]);
      expect(await memberRows(data!.organizationId)).toEqual([
        expect.objectContaining({ member_id: data!.memberId, email: owner.email, user_id: owner.userId, role: 'owner' }),
      ]);
      expect((await read(owner, data!.organizationId)).data).toEqual(data);
      expect(await organizationsOf(owner)).toEqual([expect.objectContaining({ personal: true }), data]);
      expect(await membersOf(owner, data!.organizationId)).toEqual([{ memberId: data!.memberId, email: owner.email, role: 'owner', invitedAt: expect.any(String), alertEmails: true }]);
    });

    it('a name of 1 to 100 characters once trimmed: anything else is a 400 naming `name`, and nothing is stored', async () => {
      const owner = await aCustomer(t);
      const countOrganizations = async () => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM organizations')).rows[0].n;
      const before = await countOrganizations();
      for (const name of ['', '   ', 'x'.repeat(101)]) {
        expect(fieldsOf(expectProblem(await create(owner, { name }), 400, 'VALIDATION_FAILED'))).toContain('name');
      }
      expect(fieldsOf(expectProblem(await create(owner, {} as { name: string }), 400, 'VALIDATION_FAILED'))).toContain('name');
      expect(fieldsOf(expectProblem(await create(owner, { name: 42 } as unknown as { name: string }), 400, 'VALIDATION_FAILED'))).toContain('name');
      expect(await countOrganizations()).toBe(before);
      expect(await organizationsOf(owner)).toEqual([expect.objectContaining({ personal: true })]);

      expect((await create(owner, { name: 'x' })).response.status).toBe(201);
      expect((await create(owner, { name: 'y'.repeat(100) })).data?.name).toBe('y'.repeat(100));
    });

    it('lists the organizations the caller is a member of, oldest first whatever the order of invitations, a page at a time', async () => {
      const [member, early, late] = await Promise.all([aCustomer(t), aCustomer(t), aCustomer(t)]);
      const earlier = await anOrganization(early, 'Earlier');
      const later = await anOrganization(late, 'Later');
      const laterMemberId = await invited(late, later.organizationId, member.email, 'viewer');
      const earlierMemberId = await invited(early, earlier.organizationId, member.email, 'operator');
      const own = await anOrganization(member, 'Own');
      const personal = await personalOf(member);

      const expected = [
        personal,
        { ...earlier, role: 'operator', memberId: earlierMemberId, updatedAt: expect.any(String) },
        { ...later, role: 'viewer', memberId: laterMemberId, updatedAt: expect.any(String) },
        own,
      ];
      expect(await organizationsOf(member)).toEqual(expected);

      const first = await list(member, { limit: 3 });
      expect(first.response.status).toBe(200);
      expect(first.data!.items).toEqual(expected.slice(0, 3));
      expect(first.data!.nextCursor).toEqual(expect.any(String));
      const second = await list(member, { limit: 3, cursor: first.data!.nextCursor! });
      expect(second.data).toEqual({ items: [own], nextCursor: null });

      // The default page holds them all; others see only their own.
      expect((await list(member)).data).toEqual({ items: expected, nextCursor: null });
      expect(await listedIds(early)).not.toContain(later.organizationId);
      expect(await listedIds(late)).not.toContain(own.organizationId);
    });

    it('bad paging is a 400 naming the field', async () => {
      const customer = await aCustomer(t);
      expect(fieldsOf(expectProblem(await list(customer, { limit: 0 }), 400, 'VALIDATION_FAILED'))).toEqual(['limit']);
      expect(fieldsOf(expectProblem(await list(customer, { limit: 101 }), 400, 'VALIDATION_FAILED'))).toEqual(['limit']);
      expect(fieldsOf(expectProblem(await list(customer, { cursor: 'nonsense' }), 400, 'VALIDATION_FAILED'))).toEqual(['cursor']);
      expect((await list(customer, { limit: 100 })).response.status).toBe(200);
      expect((await list(customer, { limit: 1 })).response.status).toBe(200);
    });

    it('every member reads it with their own role and membership id', async () => {
      const team = await aTeam();
      for (const role of ['owner', 'admin', 'operator', 'viewer'] as const) {
        const { data, response } = await read(team[role], team.organizationId);
        expect(response.status).toBe(200);
        expect(data).toMatchObject({ organizationId: team.organizationId, name: 'Team', personal: false, role, memberId: team.memberIds[role] });
        expect((await organizationsOf(team[role])).find((organization) => organization.organizationId === team.organizationId)).toEqual(data);
      }
    });

    it('a non-member, the administrator included, is told 404 as for an unknown id; a non-uuid id is a 400', async () => {
      const team = await aTeam();
      const admin = await anAdmin(t);
      const unknown = expectProblem(await read(team.owner, UNKNOWN_ID), 404, 'NOT_FOUND');
      expect(comparable(expectProblem(await read(team.stranger, team.organizationId), 404, 'NOT_FOUND'))).toEqual(comparable(unknown));
      expect(comparable(expectProblem(await read(admin, team.organizationId), 404, 'NOT_FOUND'))).toEqual(comparable(unknown));
      const othersPersonal = await personalOf(team.owner);
      expect(comparable(expectProblem(await read(team.stranger, othersPersonal.organizationId), 404, 'NOT_FOUND'))).toEqual(comparable(unknown));
      expect(await listedIds(team.stranger)).not.toContain(team.organizationId);
      expect(await listedIds(admin)).not.toContain(team.organizationId);
      expectProblem(await read(team.owner, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
    });

    it('without a session every route is a 401', async () => {
      const team = await aTeam();
      const nobody = { headers: {} as { authorization: string } };
      expectProblem(await list(undefined), 401, 'UNAUTHORIZED');
      expectProblem(await create(undefined, { name: 'Anonymous' }), 401, 'UNAUTHORIZED');
      expectProblem(await read(nobody, team.organizationId), 401, 'UNAUTHORIZED');
      expectProblem(await members(nobody, team.organizationId), 401, 'UNAUTHORIZED');
      expectProblem(await read({ headers: bearer('not.a.token') }, team.organizationId), 401, 'UNAUTHORIZED');
    });
  });

  describe('renaming', () => {
    it('an owner or an admin renames it: 200 with their view of it, trimmed, stored, updatedAt moved', async () => {
      const team = await aTeam();
      const { data: before } = await read(team.owner, team.organizationId);
      const byOwner = await rename(team.owner, team.organizationId, '  Renamed by owner ');
      expect(byOwner.response.status).toBe(200);
      expect(byOwner.data).toMatchObject({ organizationId: team.organizationId, name: 'Renamed by owner', personal: false, role: 'owner', memberId: team.memberIds.owner });
      expect(byOwner.data!.createdAt).toBe(before!.createdAt);
      // The team's invitations took a few milliseconds since its creation.
      expect(Date.parse(byOwner.data!.updatedAt)).toBeGreaterThan(Date.parse(before!.updatedAt));

      const byAdmin = await rename(team.admin, team.organizationId, 'Renamed by admin');
      expect(byAdmin.response.status).toBe(200);
      expect(byAdmin.data).toMatchObject({ name: 'Renamed by admin', role: 'admin', memberId: team.memberIds.admin });
      expect(await organizationRows(team.organizationId)).toEqual([expect.objectContaining({ name: 'Renamed by admin', personal_of: null })]);
      expect((await read(team.viewer, team.organizationId)).data?.name).toBe('Renamed by admin');
    });

    it('an operator or a viewer cannot: 403 ORGANIZATION_ROLE; a non-member gets 404; bad names are 400; nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      expectProblem(await rename(team.operator, team.organizationId, 'Operated'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await rename(team.viewer, team.organizationId, 'Viewed'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await rename(team.stranger, team.organizationId, 'Taken'), 404, 'NOT_FOUND');
      expectProblem(await rename(team.owner, UNKNOWN_ID, 'Nowhere'), 404, 'NOT_FOUND');
      expect(fieldsOf(expectProblem(await rename(team.owner, team.organizationId, ' '), 400, 'VALIDATION_FAILED'))).toContain('name');
      expect(fieldsOf(expectProblem(await rename(team.owner, team.organizationId, 'z'.repeat(101)), 400, 'VALIDATION_FAILED'))).toContain('name');
      expect(await stateOf(team.organizationId)).toEqual(before);
    });
  });

  describe('deleting', () => {
    it('the owner deletes it: 204, rows gone, and no member sees it any more', async () => {
      const team = await aTeam();
      const { response } = await destroy(team.owner, team.organizationId);
      expect(response.status).toBe(204);
      expect(await stateOf(team.organizationId)).toEqual({ organization: [], members: [] });
      for (const role of ['owner', 'admin', 'operator', 'viewer'] as const) {
        expectProblem(await read(team[role], team.organizationId), 404, 'NOT_FOUND');
        expectProblem(await members(team[role], team.organizationId), 404, 'NOT_FOUND');
        expect(await listedIds(team[role])).not.toContain(team.organizationId);
      }
      expectProblem(await destroy(team.owner, team.organizationId), 404, 'NOT_FOUND');
      // Their personal organizations are untouched.
      expect((await personalOf(team.owner)).role).toBe('owner');
    });

    it('an admin, an operator or a viewer cannot: 403 ORGANIZATION_ROLE; a non-member gets 404; nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      for (const role of ['admin', 'operator', 'viewer'] as const) expectProblem(await destroy(team[role], team.organizationId), 403, 'ORGANIZATION_ROLE');
      expectProblem(await destroy(team.stranger, team.organizationId), 404, 'NOT_FOUND');
      expectProblem(await destroy(team.owner, UNKNOWN_ID), 404, 'NOT_FOUND');
      expectProblem(await destroy(team.owner, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
      expect(await stateOf(team.organizationId)).toEqual(before);
    });
  });

  describe('inviting', () => {
    it('inviting a verified account: 201 with the member, address trimmed and lower-cased, bound at once with that role', async () => {
      const [owner, invitee] = await Promise.all([aCustomer(t), aCustomer(t)]);
      const organization = await anOrganization(owner);
      const { data, response } = await invite(owner, organization.organizationId, { email: `  ${invitee.email.toUpperCase()} `, role: 'operator' });
      expect(response.status).toBe(201);
      expect(data).toEqual({ memberId: expect.stringMatching(UUID), email: invitee.email, role: 'operator', invitedAt: expect.any(String), alertEmails: true });
      expect(JSON.stringify(data)).not.toContain(invitee.userId);
      expect(await memberRows(organization.organizationId)).toEqual([
        expect.objectContaining({ member_id: organization.memberId, user_id: owner.userId, role: 'owner' }),
        expect.objectContaining({ member_id: data!.memberId, email: invitee.email, user_id: invitee.userId, role: 'operator' }),
      ]);
      const seen = (await organizationsOf(invitee)).find((item) => item.organizationId === organization.organizationId);
      expect(seen).toEqual({ ...organization, role: 'operator', memberId: data!.memberId, updatedAt: expect.any(String) });
      expect((await read(invitee, organization.organizationId)).data).toEqual(seen);
    });

    it('inviting the same address again changes its role: 200, the same member', async () => {
      const [owner, invitee] = await Promise.all([aCustomer(t), aCustomer(t)]);
      const organization = await anOrganization(owner);
      const first = await invite(owner, organization.organizationId, { email: invitee.email, role: 'viewer' });
      const again = await invite(owner, organization.organizationId, { email: invitee.email.toUpperCase(), role: 'admin' });
      expect(again.response.status).toBe(200);
      expect(again.data).toEqual({ ...first.data, role: 'admin' });
      const rows = (await memberRows(organization.organizationId)).filter((row) => row.email === invitee.email);
      expect(rows).toEqual([expect.objectContaining({ member_id: first.data!.memberId, role: 'admin', user_id: invitee.userId })]);
      expect((await read(invitee, organization.organizationId)).data?.role).toBe('admin');
    });

    it('answers the same whether or not the address has an account, and never with a userId', async () => {
      const [owner, invitee] = await Promise.all([aCustomer(t), aCustomer(t)]);
      const organization = await anOrganization(owner);
      const nobody = anAddress('nobody');
      const withAccount = await invite(owner, organization.organizationId, { email: invitee.email, role: 'viewer' });
      const without = await invite(owner, organization.organizationId, { email: nobody, role: 'viewer' });
      expect(without.response.status).toBe(withAccount.response.status);
      expect(Object.keys(withAccount.data!).sort()).toEqual(MEMBER_KEYS);
      expect(Object.keys(without.data!).sort()).toEqual(MEMBER_KEYS);
      const blank = { memberId: '', email: '', invitedAt: '' };
      expect({ ...without.data, ...blank }).toEqual({ ...withAccount.data, ...blank });
      // The same again, for a change of role.
      const againWith = await invite(owner, organization.organizationId, { email: invitee.email, role: 'operator' });
      const againWithout = await invite(owner, organization.organizationId, { email: nobody, role: 'operator' });
      expect(againWithout.response.status).toBe(againWith.response.status);
      expect({ ...againWithout.data, ...blank }).toEqual({ ...againWith.data, ...blank });

      const listed = await membersOf(owner, organization.organizationId);
      expect(listed.map((member) => Object.keys(member).sort())).toEqual([MEMBER_KEYS, MEMBER_KEYS, MEMBER_KEYS]);
      expect(JSON.stringify(listed)).not.toContain(invitee.userId);
      expect(JSON.stringify(listed)).not.toContain(owner.userId);
      expect((await memberRows(organization.organizationId)).find((row) => row.email === nobody)?.user_id).toBeNull();
    });

    it('an invitation to an address without an account waits for its sign-up, and counts once the address is verified', async () => {
      const owner = await aCustomer(t);
      const organization = await anOrganization(owner);
      const email = anAddress();
      const { data: invitation } = await invite(owner, organization.organizationId, { email, role: 'operator' });
      expect(await memberRows(organization.organizationId)).toEqual([expect.anything(), expect.objectContaining({ email, user_id: null, role: 'operator' })]);

      expect((await t.api.POST('/api/v1/auth/signup', { body: { email, password: CUSTOMER_PASSWORD } })).response.status).toBe(201);
      const { data: tokens } = await t.api.POST('/api/v1/auth/login', { body: { email, password: CUSTOMER_PASSWORD } });
      const invitee = { headers: bearer(tokens!.accessToken) };
      // Signed up but not verified: the invitation does not count yet.
      expect((await memberRows(organization.organizationId)).find((row) => row.email === email)?.user_id).toBeNull();
      expectProblem(await read(invitee, organization.organizationId), 404, 'NOT_FOUND');
      expect(await listedIds(invitee)).not.toContain(organization.organizationId);

      await verify(email);
      const { data: me } = await t.api.GET('/api/v1/users/me', { headers: invitee.headers });
      expect((await memberRows(organization.organizationId)).find((row) => row.email === email)?.user_id).toBe(me!.userId);
      const { data, response } = await read(invitee, organization.organizationId);
      expect(response.status).toBe(200);
      expect(data).toEqual({ ...organization, role: 'operator', memberId: invitation!.memberId, updatedAt: expect.any(String) });
      expect(await listedIds(invitee)).toContain(organization.organizationId);
    });

    it('an invitation to an unverified account counts once it is verified', async () => {
      const [owner, unverified] = await Promise.all([aCustomer(t), aCustomer(t, { verified: false })]);
      const organization = await anOrganization(owner);
      const memberId = await invited(owner, organization.organizationId, unverified.email, 'viewer');
      expect((await memberRows(organization.organizationId)).find((row) => row.member_id === memberId)?.user_id).toBeNull();
      expectProblem(await read(unverified, organization.organizationId), 404, 'NOT_FOUND');

      await verify(unverified.email);
      expect((await memberRows(organization.organizationId)).find((row) => row.member_id === memberId)?.user_id).toBe(unverified.userId);
      expect((await read(unverified, organization.organizationId)).data).toMatchObject({ role: 'viewer', memberId });
    });

    it('an admin invites admins, operators and viewers, but neither invites an owner nor changes an owner by inviting: 403 ORGANIZATION_ROLE', async () => {
      const team = await aTeam();
      for (const role of ['admin', 'operator', 'viewer'] as const) {
        const { data, response } = await invite(team.admin, team.organizationId, { email: anAddress(role), role });
        expect(response.status).toBe(201);
        expect(data!.role).toBe(role);
      }
      const before = await stateOf(team.organizationId);
      const newcomer = anAddress('would-be-owner');
      expectProblem(await invite(team.admin, team.organizationId, { email: newcomer, role: 'owner' }), 403, 'ORGANIZATION_ROLE');
      expectProblem(await invite(team.admin, team.organizationId, { email: team.viewer.email, role: 'owner' }), 403, 'ORGANIZATION_ROLE');
      expectProblem(await invite(team.admin, team.organizationId, { email: team.owner.email, role: 'viewer' }), 403, 'ORGANIZATION_ROLE');
      expect(await stateOf(team.organizationId)).toEqual(before);

      // The owner may.
      expect((await invite(team.owner, team.organizationId, { email: newcomer, role: 'owner' })).response.status).toBe(201);
      expect((await invite(team.owner, team.organizationId, { email: team.viewer.email, role: 'owner' })).response.status).toBe(200);
      expect(await roleOf(team.organizationId, team.memberIds.viewer)).toBe('owner');
    });

    it('an operator or a viewer cannot invite: 403 ORGANIZATION_ROLE; a non-member gets 404; nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      for (const who of [team.operator, team.viewer]) {
        expectProblem(await invite(who, team.organizationId, { email: anAddress(), role: 'viewer' }), 403, 'ORGANIZATION_ROLE');
        expectProblem(await invite(who, team.organizationId, { email: team.stranger.email, role: 'viewer' }), 403, 'ORGANIZATION_ROLE');
      }
      // Not even to raise themselves.
      expectProblem(await invite(team.viewer, team.organizationId, { email: team.viewer.email, role: 'admin' }), 403, 'ORGANIZATION_ROLE');
      expectProblem(await invite(team.operator, team.organizationId, { email: team.operator.email, role: 'owner' }), 403, 'ORGANIZATION_ROLE');
      const unknown = expectProblem(await invite(team.owner, UNKNOWN_ID, { email: anAddress(), role: 'viewer' }), 404, 'NOT_FOUND');
      const stranger = expectProblem(await invite(team.stranger, team.organizationId, { email: team.stranger.email, role: 'owner' }), 404, 'NOT_FOUND');
      expect(comparable(stranger)).toEqual(comparable(unknown));
      expect(await stateOf(team.organizationId)).toEqual(before);
      expect(await listedIds(team.stranger)).not.toContain(team.organizationId);
    });

    it('bad input is a 400 naming the field, and nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      expect(fieldsOf(expectProblem(await invite(team.owner, team.organizationId, { email: 'not-an-address', role: 'viewer' }), 400, 'VALIDATION_FAILED'))).toEqual(['email']);
      expect(fieldsOf(expectProblem(await invite(team.owner, team.organizationId, { email: anAddress(), role: 'superuser' as Role }), 400, 'VALIDATION_FAILED'))).toEqual(['role']);
      expect(
        [...new Set(fieldsOf(expectProblem(await invite(team.owner, team.organizationId, {} as { email: string; role: Role }), 400, 'VALIDATION_FAILED')))].sort(),
      ).toEqual(['email', 'role']);
      expectProblem(await invite(team.owner, 'not-a-uuid', { email: anAddress(), role: 'viewer' }), 400, 'VALIDATION_FAILED');
      expect(await stateOf(team.organizationId)).toEqual(before);
    });
  });

  describe('listing members', () => {
    it('every member lists them, oldest first, a page at a time', async () => {
      const team = await aTeam();
      const expected = (['owner', 'admin', 'operator', 'viewer'] as const).map((role) => ({
        memberId: team.memberIds[role],
        email: team[role].email,
        role,
        invitedAt: expect.any(String),
        alertEmails: true,
      }));
      for (const role of ['owner', 'admin', 'operator', 'viewer'] as const) {
        expect((await members(team[role], team.organizationId)).data).toEqual({ items: expected, nextCursor: null });
      }
      const first = await members(team.viewer, team.organizationId, { limit: 3 });
      expect(first.data!.items).toEqual(expected.slice(0, 3));
      expect(first.data!.nextCursor).toEqual(expect.any(String));
      const second = await members(team.viewer, team.organizationId, { limit: 3, cursor: first.data!.nextCursor! });
      expect(second.data).toEqual({ items: expected.slice(3), nextCursor: null });
      expect(fieldsOf(expectProblem(await members(team.viewer, team.organizationId, { cursor: 'nonsense' }), 400, 'VALIDATION_FAILED'))).toEqual(['cursor']);
      expect(fieldsOf(expectProblem(await members(team.viewer, team.organizationId, { limit: 0 }), 400, 'VALIDATION_FAILED'))).toEqual(['limit']);
    });

    it('a non-member gets 404, as for an unknown organization', async () => {
      const team = await aTeam();
      const unknown = expectProblem(await members(team.owner, UNKNOWN_ID), 404, 'NOT_FOUND');
      expect(comparable(expectProblem(await members(team.stranger, team.organizationId), 404, 'NOT_FOUND'))).toEqual(comparable(unknown));
      expectProblem(await members(team.owner, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
    });
  });

  describe('changing roles', () => {
    it('the owner changes any role, makes owners, and the member sees the new role at once', async () => {
      const team = await aTeam();
      const demoted = await changeRole(team.owner, team.organizationId, team.memberIds.admin, 'viewer');
      expect(demoted.response.status).toBe(200);
      expect(demoted.data).toEqual({ memberId: team.memberIds.admin, email: team.admin.email, role: 'viewer', invitedAt: expect.any(String), alertEmails: true });
      expect(await roleOf(team.organizationId, team.memberIds.admin)).toBe('viewer');
      expect((await read(team.admin, team.organizationId)).data?.role).toBe('viewer');
      expectProblem(await rename(team.admin, team.organizationId, 'No longer'), 403, 'ORGANIZATION_ROLE');

      const promoted = await changeRole(team.owner, team.organizationId, team.memberIds.viewer, 'owner');
      expect(promoted.data).toMatchObject({ memberId: team.memberIds.viewer, role: 'owner' });
      expect((await read(team.viewer, team.organizationId)).data?.role).toBe('owner');
      // Owners change owners.
      expect((await changeRole(team.viewer, team.organizationId, team.memberIds.owner, 'operator')).data?.role).toBe('operator');
      expect(await roleOf(team.organizationId, team.memberIds.owner)).toBe('operator');
    });

    it('an admin changes the roles of non-owners among non-owner roles', async () => {
      const team = await aTeam();
      expect((await changeRole(team.admin, team.organizationId, team.memberIds.operator, 'admin')).data?.role).toBe('admin');
      expect((await changeRole(team.admin, team.organizationId, team.memberIds.viewer, 'operator')).data?.role).toBe('operator');
      expect(await roleOf(team.organizationId, team.memberIds.operator)).toBe('admin');
      expect(await roleOf(team.organizationId, team.memberIds.viewer)).toBe('operator');
    });

    it('an admin cannot make an owner nor change an owner’s role: 403 ORGANIZATION_ROLE, nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      expectProblem(await changeRole(team.admin, team.organizationId, team.memberIds.viewer, 'owner'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await changeRole(team.admin, team.organizationId, team.memberIds.admin, 'owner'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await changeRole(team.admin, team.organizationId, team.memberIds.owner, 'viewer'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await changeRole(team.admin, team.organizationId, team.memberIds.owner, 'admin'), 403, 'ORGANIZATION_ROLE');
      expect(await stateOf(team.organizationId)).toEqual(before);
    });

    it('an operator or a viewer changes no role, not even their own: 403 ORGANIZATION_ROLE; a non-member gets 404; nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      for (const who of [team.operator, team.viewer]) {
        expectProblem(await changeRole(who, team.organizationId, team.memberIds.admin, 'viewer'), 403, 'ORGANIZATION_ROLE');
        expectProblem(await changeRole(who, team.organizationId, team.memberIds.owner, 'viewer'), 403, 'ORGANIZATION_ROLE');
      }
      expectProblem(await changeRole(team.operator, team.organizationId, team.memberIds.viewer, 'operator'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await changeRole(team.viewer, team.organizationId, team.memberIds.viewer, 'admin'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await changeRole(team.operator, team.organizationId, team.memberIds.operator, 'owner'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await changeRole(team.stranger, team.organizationId, team.memberIds.viewer, 'admin'), 404, 'NOT_FOUND');
      expect(await stateOf(team.organizationId)).toEqual(before);
    });

    it('the last owner cannot be demoted: 409 LAST_OWNER; with a second owner, it may step down', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      expectProblem(await changeRole(team.owner, team.organizationId, team.memberIds.owner, 'admin'), 409, 'LAST_OWNER');
      expectProblem(await changeRole(team.owner, team.organizationId, team.memberIds.owner, 'viewer'), 409, 'LAST_OWNER');
      expect(await stateOf(team.organizationId)).toEqual(before);

      expect((await changeRole(team.owner, team.organizationId, team.memberIds.admin, 'owner')).response.status).toBe(200);
      const stepped = await changeRole(team.owner, team.organizationId, team.memberIds.owner, 'admin');
      expect(stepped.response.status).toBe(200);
      expect(stepped.data?.role).toBe('admin');
      // Now the former admin is the last owner.
      expectProblem(await changeRole(team.admin, team.organizationId, team.memberIds.admin, 'operator'), 409, 'LAST_OWNER');
      expect(await roleOf(team.organizationId, team.memberIds.admin)).toBe('owner');
    });

    it('an unknown member, or one of another organization, is a 404; a bad role or id a 400; nothing changes', async () => {
      const team = await aTeam();
      const other = await anOrganization(team.stranger, 'Elsewhere');
      const before = await stateOf(team.organizationId);
      expectProblem(await changeRole(team.owner, team.organizationId, UNKNOWN_ID, 'viewer'), 404, 'NOT_FOUND');
      expectProblem(await changeRole(team.owner, team.organizationId, other.memberId, 'viewer'), 404, 'NOT_FOUND');
      expectProblem(await changeRole(team.owner, team.organizationId, 'not-a-uuid', 'viewer'), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(expectProblem(await changeRole(team.owner, team.organizationId, team.memberIds.viewer, 'boss' as Role), 400, 'VALIDATION_FAILED'))).toEqual(['role']);
      const patch = (body: object) =>
        t.api.PATCH('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId: team.organizationId, memberId: team.memberIds.owner } }, body, headers: team.owner.headers });
      expect(fieldsOf(expectProblem(await patch({}), 400, 'VALIDATION_FAILED'))).toEqual(['(root)']);
      expect(fieldsOf(expectProblem(await patch({ alertEmails: 'no' }), 400, 'VALIDATION_FAILED'))).toEqual(['alertEmails']);
      expect(await stateOf(team.organizationId)).toEqual(before);
      expect(await roleOf(other.organizationId, other.memberId)).toBe('owner');
    });
  });

  describe('removing members and leaving', () => {
    it('the owner removes anyone: 204, the row goes, and the removed member no longer sees the organization', async () => {
      const team = await aTeam();
      expect((await removeMember(team.owner, team.organizationId, team.memberIds.admin)).response.status).toBe(204);
      expect((await memberRows(team.organizationId)).map((row) => row.member_id)).toEqual([team.memberIds.owner, team.memberIds.operator, team.memberIds.viewer]);
      expectProblem(await read(team.admin, team.organizationId), 404, 'NOT_FOUND');
      expectProblem(await members(team.admin, team.organizationId), 404, 'NOT_FOUND');
      expectProblem(await rename(team.admin, team.organizationId, 'Still here?'), 404, 'NOT_FOUND');
      expect(await listedIds(team.admin)).not.toContain(team.organizationId);
      expect((await membersOf(team.owner, team.organizationId)).map((member) => member.email)).toEqual([team.owner.email, team.operator.email, team.viewer.email]);

      // Another owner too.
      expect((await changeRole(team.owner, team.organizationId, team.memberIds.viewer, 'owner')).response.status).toBe(200);
      expect((await removeMember(team.owner, team.organizationId, team.memberIds.viewer)).response.status).toBe(204);
      expectProblem(await read(team.viewer, team.organizationId), 404, 'NOT_FOUND');
      expectProblem(await removeMember(team.owner, team.organizationId, team.memberIds.viewer), 404, 'NOT_FOUND');
    });

    it('an admin removes non-owners, but not an owner: 403 ORGANIZATION_ROLE, nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      expectProblem(await removeMember(team.admin, team.organizationId, team.memberIds.owner), 403, 'ORGANIZATION_ROLE');
      expect(await stateOf(team.organizationId)).toEqual(before);
      expect((await removeMember(team.admin, team.organizationId, team.memberIds.viewer)).response.status).toBe(204);
      expect((await removeMember(team.admin, team.organizationId, team.memberIds.operator)).response.status).toBe(204);
      expect((await memberRows(team.organizationId)).map((row) => row.member_id)).toEqual([team.memberIds.owner, team.memberIds.admin]);
      expectProblem(await read(team.viewer, team.organizationId), 404, 'NOT_FOUND');
    });

    it('an operator or a viewer removes no one else: 403 ORGANIZATION_ROLE; a non-member gets 404; nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      expectProblem(await removeMember(team.operator, team.organizationId, team.memberIds.viewer), 403, 'ORGANIZATION_ROLE');
      expectProblem(await removeMember(team.operator, team.organizationId, team.memberIds.admin), 403, 'ORGANIZATION_ROLE');
      expectProblem(await removeMember(team.viewer, team.organizationId, team.memberIds.operator), 403, 'ORGANIZATION_ROLE');
      expectProblem(await removeMember(team.viewer, team.organizationId, team.memberIds.owner), 403, 'ORGANIZATION_ROLE');
      expectProblem(await removeMember(team.stranger, team.organizationId, team.memberIds.viewer), 404, 'NOT_FOUND');
      expectProblem(await removeMember(team.owner, team.organizationId, UNKNOWN_ID), 404, 'NOT_FOUND');
      expectProblem(await removeMember(team.owner, team.organizationId, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
      expect(await stateOf(team.organizationId)).toEqual(before);
    });

    it('any member leaves with their own membership id from GET /organizations: 204, and no longer sees it', async () => {
      const team = await aTeam();
      for (const role of ['viewer', 'operator', 'admin'] as const) {
        const mine = (await organizationsOf(team[role])).find((organization) => organization.organizationId === team.organizationId)!;
        expect(mine.memberId).toBe(team.memberIds[role]);
        expect((await removeMember(team[role], team.organizationId, mine.memberId)).response.status).toBe(204);
        expectProblem(await read(team[role], team.organizationId), 404, 'NOT_FOUND');
        expect(await listedIds(team[role])).not.toContain(team.organizationId);
      }
      expect(await memberRows(team.organizationId)).toEqual([expect.objectContaining({ member_id: team.memberIds.owner, role: 'owner' })]);
    });

    it('the last owner cannot leave: 409 LAST_OWNER; once another member is owner, it may', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      expectProblem(await removeMember(team.owner, team.organizationId, team.memberIds.owner), 409, 'LAST_OWNER');
      expect(await stateOf(team.organizationId)).toEqual(before);

      expect((await changeRole(team.owner, team.organizationId, team.memberIds.admin, 'owner')).response.status).toBe(200);
      expect((await removeMember(team.owner, team.organizationId, team.memberIds.owner)).response.status).toBe(204);
      expectProblem(await read(team.owner, team.organizationId), 404, 'NOT_FOUND');
      expect((await membersOf(team.admin, team.organizationId)).map((member) => [member.email, member.role])).toEqual([
        [team.admin.email, 'owner'],
        [team.operator.email, 'operator'],
        [team.viewer.email, 'viewer'],
      ]);
      expectProblem(await removeMember(team.admin, team.organizationId, team.memberIds.admin), 409, 'LAST_OWNER');
    });

    it('two owners stepping down at the same moment: one is refused 409 LAST_OWNER, an owner remains', async () => {
      for (let round = 0; round < 3; round++) {
        const team = await aTeam();
        expect((await changeRole(team.owner, team.organizationId, team.memberIds.admin, 'owner')).response.status).toBe(200);
        const [demoted, left] = await Promise.all([
          changeRole(team.owner, team.organizationId, team.memberIds.owner, 'viewer'),
          removeMember(team.admin, team.organizationId, team.memberIds.admin),
        ]);
        const statuses = [demoted.response.status, left.response.status];
        expect(statuses.filter((status) => status === 409)).toHaveLength(1);
        expect(statuses.filter((status) => status === 200 || status === 204)).toHaveLength(1);
        expectProblem(demoted.response.status === 409 ? demoted : left, 409, 'LAST_OWNER');
        expect((await memberRows(team.organizationId)).filter((row) => row.role === 'owner')).toHaveLength(1);
      }
    });
  });

  describe('transferring', () => {
    it('the owner hands the organization to a member: 200, the caller is now admin and the member owner', async () => {
      const team = await aTeam();
      const { data, response } = await transfer(team.owner, team.organizationId, team.memberIds.viewer);
      expect(response.status).toBe(200);
      expect(data).toMatchObject({ organizationId: team.organizationId, name: 'Team', personal: false, role: 'admin', memberId: team.memberIds.owner });
      expect(await roleOf(team.organizationId, team.memberIds.owner)).toBe('admin');
      expect(await roleOf(team.organizationId, team.memberIds.viewer)).toBe('owner');
      expect((await read(team.viewer, team.organizationId)).data?.role).toBe('owner');
      expect((await read(team.owner, team.organizationId)).data?.role).toBe('admin');
      // The former owner is an admin now: deleting is the new owner's.
      expectProblem(await destroy(team.owner, team.organizationId), 403, 'ORGANIZATION_ROLE');
      expect((await destroy(team.viewer, team.organizationId)).response.status).toBe(204);
    });

    it('only an owner transfers: an admin, an operator or a viewer gets 403 ORGANIZATION_ROLE, a non-member 404; nothing changes', async () => {
      const team = await aTeam();
      const before = await stateOf(team.organizationId);
      expectProblem(await transfer(team.admin, team.organizationId, team.memberIds.admin), 403, 'ORGANIZATION_ROLE');
      expectProblem(await transfer(team.admin, team.organizationId, team.memberIds.viewer), 403, 'ORGANIZATION_ROLE');
      expectProblem(await transfer(team.operator, team.organizationId, team.memberIds.operator), 403, 'ORGANIZATION_ROLE');
      expectProblem(await transfer(team.viewer, team.organizationId, team.memberIds.viewer), 403, 'ORGANIZATION_ROLE');
      expectProblem(await transfer(team.stranger, team.organizationId, team.memberIds.viewer), 404, 'NOT_FOUND');
      expect(await stateOf(team.organizationId)).toEqual(before);
    });

    it('an unknown member is a 404, the caller’s own membership a 400; nothing changes', async () => {
      const team = await aTeam();
      const other = await anOrganization(team.stranger, 'Elsewhere');
      const before = await stateOf(team.organizationId);
      expectProblem(await transfer(team.owner, team.organizationId, UNKNOWN_ID), 404, 'NOT_FOUND');
      expectProblem(await transfer(team.owner, team.organizationId, other.memberId), 404, 'NOT_FOUND');
      expectProblem(await transfer(team.owner, UNKNOWN_ID, team.memberIds.viewer), 404, 'NOT_FOUND');
      expectProblem(await transfer(team.owner, team.organizationId, team.memberIds.owner), 400, 'VALIDATION_FAILED');
      expectProblem(await transfer(team.owner, team.organizationId, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
      expect(await stateOf(team.organizationId)).toEqual(before);
    });
  });

  describe('deleting an account', () => {
    it('removes its memberships and its personal organization; the organizations it belonged to stay', async () => {
      const [leaving, other] = await Promise.all([aCustomer(t), aCustomer(t)]);
      const personal = await personalOf(leaving);
      const shared = await anOrganization(other, 'Shared');
      await invited(other, shared.organizationId, leaving.email, 'admin');
      expect(await listedIds(leaving)).toContain(shared.organizationId);

      const { response } = await t.api.DELETE('/api/v1/users/me', { body: { password: CUSTOMER_PASSWORD }, headers: leaving.headers });
      expect(response.status).toBe(204);

      expect(await stateOf(personal.organizationId)).toEqual({ organization: [], members: [] });
      const left = await t.db.query('SELECT member_id FROM organization_members WHERE user_id = $1 OR lower(email) = $2', [leaving.userId, leaving.email]);
      expect(left.rows).toEqual([]);
      expect(await organizationRows(shared.organizationId)).toEqual([expect.objectContaining({ name: 'Shared', personal_of: null })]);
      expect(await membersOf(other, shared.organizationId)).toEqual([{ memberId: shared.memberId, email: other.email, role: 'owner', invitedAt: expect.any(String), alertEmails: true }]);
    });
  });
});
