import { ADMIN_SETTINGS, CUSTOMER_PASSWORD, aClaimedDevice, aCustomer, aRegisteredDevice, anAdmin, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { anOrganization as anOrganizationOf, type OrganizationRole } from '../support/organizations.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { dataOf, openSse, type SseMessage, type SseStream } from '../support/sse.js';
import { ingest, iso } from '../support/telemetry.js';

/*
 * Devices owned by organizations: a claim into an organization (by its owners, admins and
 * operators), what each role is to the organization's devices through the one visibility rule
 * (dashboard list and detail, changes), a removed member losing them at once, and the refusals
 * that keep an organization with devices owned: deleting it, or deleting its only owner's account.
 */


describe('devices of organizations', () => {
  let t: TestApp;
  const streams: SseStream[] = [];

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, STREAM_HEARTBEAT_MS: '300' });
  });
  afterEach(() => {
    for (const opened of streams.splice(0)) opened.close();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function stream(who: SignedIn): Promise<SseStream> {
    const opened = await openSse(new URL('/api/v1/dashboard/stream', t.baseUrl).toString(), { authorization: `Bearer ${who.accessToken}` });
    streams.push(opened);
    return opened;
  }
  const telemetryOf = (deviceId: string, soc: number) => (message: SseMessage) =>
    message.event === 'telemetry' && dataOf<{ deviceId: string; metrics: { soc: number } }>(message).deviceId === deviceId && dataOf<{ metrics: { soc: number } }>(message).metrics.soc === soc;
  const eventOf = (type: string, deviceId: string) => (message: SseMessage) => message.event === type && dataOf<{ deviceId: string }>(message).deviceId === deviceId;
  let clock = Date.now() - 60_000;
  async function sent(accessToken: string, soc: number): Promise<void> {
    clock += 1000;
    const { response } = await ingest(t.api, accessToken, [{ ts: iso(clock), metrics: { soc, voltage: 13.1 } }]);
    expect(response.status).toBe(200);
  }

  const anOrganization = () => anOrganizationOf(t);

  const ownerOf = async (deviceId: string) => (await t.db.query<{ owner_id: string | null }>('SELECT owner_id FROM devices WHERE device_id = $1', [deviceId])).rows[0]?.owner_id;
  const detail = (who: SignedIn, deviceId: string) => t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers: who.headers });
  const rename = (who: SignedIn, deviceId: string, name: string) => t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body: { name }, headers: who.headers });

  it('claims a device into the organization for an operator; the answer names the organization as owner', async () => {
    const { organizationId, members } = await anOrganization();
    const device = await aRegisteredDevice(t);

    const claimed = await claim(t, members.operator, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId });

    expect(claimed.response.status).toBe(200);
    expect(claimed.data).toMatchObject({ deviceId: device.body.deviceId, ownerId: organizationId });
    expect(await ownerOf(device.body.deviceId)).toBe(organizationId);
    // Claimed again by another member who may claim: already the organization's, the same claim.
    const again = await claim(t, members.admin, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId });
    expect(again.response.status).toBe(200);
    expect(again.data!.claimedAt).toBe(claimed.data!.claimedAt);
    // Into a personal organization it is someone else's device.
    expectProblem(await claim(t, members.admin, { deviceId: device.body.deviceId, claimCode: device.body.claimCode }), 409, 'DEVICE_ALREADY_CLAIMED');
  });

  it('refuses a claim into an organization by a viewer (403) and by a non-member (400 naming organizationId); the device stays unclaimed', async () => {
    const { organizationId, members } = await anOrganization();
    const stranger = await aCustomer(t);
    const device = await aRegisteredDevice(t);

    expectProblem(await claim(t, members.viewer, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId }), 403, 'ORGANIZATION_ROLE');
    const refused = expectProblem(await claim(t, stranger, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId }), 400, 'VALIDATION_FAILED');
    expect(fieldsOf(refused)).toEqual(['organizationId']);
    expect(await ownerOf(device.body.deviceId)).toBeNull();
  });

  it('shows the organization\'s devices to every member by role, and to no one else', async () => {
    const { organizationId, members } = await anOrganization();
    const stranger = await aCustomer(t);
    const device = await aRegisteredDevice(t);
    expect((await claim(t, members.owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);

    const expected: Record<OrganizationRole, string> = { owner: 'owner', admin: 'owner', operator: 'installer', viewer: 'viewer' };
    for (const role of Object.keys(expected) as OrganizationRole[]) {
      const list = await t.api.GET('/api/v1/dashboard/devices', { headers: members[role].headers });
      expect(list.data!.items.map((item) => [item.deviceId, item.access])).toEqual([[device.body.deviceId, expected[role]]]);
      const one = await detail(members[role], device.body.deviceId);
      expect(one.response.status).toBe(200);
    }
    expectProblem(await detail(stranger, device.body.deviceId), 404, 'NOT_FOUND');
    const strangers = await t.api.GET('/api/v1/dashboard/devices', { headers: stranger.headers });
    expect(strangers.data!.items).toEqual([]);
  });

  it('lets owners, admins and operators change a device, not viewers (403 SHARE_ROLE, nothing changed)', async () => {
    const { organizationId, members } = await anOrganization();
    const device = await aRegisteredDevice(t);
    expect((await claim(t, members.operator, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);

    for (const role of ['owner', 'admin', 'operator'] as const) {
      const renamed = await rename(members[role], device.body.deviceId, `by ${role}`);
      expect(renamed.response.status).toBe(200);
      expect(renamed.data!.name).toBe(`by ${role}`);
    }
    expectProblem(await rename(members.viewer, device.body.deviceId, 'by viewer'), 403, 'SHARE_ROLE');
    expect((await detail(members.owner, device.body.deviceId)).data!.name).toBe('by operator');
  });

  it('takes the devices away from a removed member at once, and from one who leaves', async () => {
    const { organizationId, members, memberIds } = await anOrganization();
    const device = await aRegisteredDevice(t);
    expect((await claim(t, members.owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
    expect((await detail(members.viewer, device.body.deviceId)).response.status).toBe(200);

    const removed = await t.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId: memberIds.viewer } }, headers: members.admin.headers });
    expect(removed.response.status).toBe(204);
    expectProblem(await detail(members.viewer, device.body.deviceId), 404, 'NOT_FOUND');

    const left = await t.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId: memberIds.operator } }, headers: members.operator.headers });
    expect(left.response.status).toBe(204);
    expectProblem(await detail(members.operator, device.body.deviceId), 404, 'NOT_FOUND');
    expect((await detail(members.admin, device.body.deviceId)).response.status).toBe(200);
  });

  it('refuses to delete an organization that owns devices (409 ORGANIZATION_NOT_EMPTY), and deletes it once it owns none', async () => {
    const { organizationId, members } = await anOrganization();
    const device = await aRegisteredDevice(t);
    expect((await claim(t, members.owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);

    expectProblem(await t.api.DELETE('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } }, headers: members.owner.headers }), 409, 'ORGANIZATION_NOT_EMPTY');
    expect((await t.db.query('SELECT 1 FROM organizations WHERE organization_id = $1', [organizationId])).rowCount).toBe(1);
    expect(await ownerOf(device.body.deviceId)).toBe(organizationId);

    await t.db.query('UPDATE devices SET owner_id = NULL WHERE device_id = $1', [device.body.deviceId]);
    expect((await t.api.DELETE('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } }, headers: members.owner.headers })).response.status).toBe(204);
    expect((await t.db.query('SELECT 1 FROM organizations WHERE organization_id = $1', [organizationId])).rowCount).toBe(0);
  });

  it('refuses to delete the account of an organization\'s only owner while it owns devices (409 LAST_OWNER), nothing deleted', async () => {
    const { organizationId, members } = await anOrganization();
    const device = await aRegisteredDevice(t);
    expect((await claim(t, members.owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
    // A device of the owner's own keeps its claim too when the deletion is refused.
    const personal = await aClaimedDevice(t, members.owner);

    const refused = expectProblem(await t.api.DELETE('/api/v1/users/me', { body: { password: CUSTOMER_PASSWORD }, headers: members.owner.headers }), 409, 'LAST_OWNER');

    expect(refused.detail).toContain('Solar Installers Ltd');
    expect((await t.db.query('SELECT 1 FROM users WHERE id = $1', [members.owner.userId])).rowCount).toBe(1);
    expect(await ownerOf(device.body.deviceId)).toBe(organizationId);
    expect(await ownerOf(personal.body.deviceId)).toBe(members.owner.userId);
    expect((await t.db.query('SELECT 1 FROM organization_members WHERE organization_id = $1', [organizationId])).rowCount).toBe(4);
  });

  it('deletes an account that owns its personal devices only: they are released, its personal organization goes', async () => {
    const owner = await aCustomer(t);
    const device = await aClaimedDevice(t, owner);

    const deleted = await t.api.DELETE('/api/v1/users/me', { body: { password: CUSTOMER_PASSWORD }, headers: owner.headers });

    expect(deleted.response.status).toBe(204);
    expect(await ownerOf(device.body.deviceId)).toBeNull();
    expect((await t.db.query('SELECT 1 FROM organizations WHERE organization_id = $1', [owner.userId])).rowCount).toBe(0);
    expect((await t.db.query('SELECT 1 FROM organization_members WHERE user_id = $1', [owner.userId])).rowCount).toBe(0);
  });

  it("streams the organization's devices to its members live; a removed member's open stream stops at once", async () => {
    const { organizationId, members, memberIds } = await anOrganization();
    const device = await aRegisteredDevice(t);
    const watching = { owner: await stream(members.owner), viewer: await stream(members.viewer), operator: await stream(members.operator) };
    expect([watching.owner.status, watching.viewer.status, watching.operator.status]).toEqual([200, 200, 200]);
    expect((await claim(t, members.operator, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
    await watching.viewer.next(eventOf('device.claimed', device.body.deviceId));

    await sent(device.registered.accessToken, 71);
    for (const opened of Object.values(watching)) await opened.next(telemetryOf(device.body.deviceId, 71));

    const removed = await t.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId: memberIds.viewer } }, headers: members.owner.headers });
    expect(removed.response.status).toBe(204);
    await sent(device.registered.accessToken, 72);
    await watching.owner.next(telemetryOf(device.body.deviceId, 72));
    await watching.operator.next(telemetryOf(device.body.deviceId, 72));
    // Whatever the viewer's stream had before its own next claim, it has read: the frame of 72 is not among it.
    const own = await aClaimedDevice(t, members.viewer);
    await watching.viewer.next(eventOf('device.claimed', own.body.deviceId));
    expect(watching.viewer.messages.filter(telemetryOf(device.body.deviceId, 72))).toEqual([]);
  });

  it("lets the organization's owners and admins release its devices and open their re-registration; operators and viewers get the 404 of a device they do not own", async () => {
    const { organizationId, members } = await anOrganization();
    const release = (who: SignedIn, deviceId: string) => t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId } }, headers: who.headers });
    const reopen = (who: SignedIn, deviceId: string) => t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', { params: { path: { deviceId } }, headers: who.headers });
    const devices = [await aRegisteredDevice(t), await aRegisteredDevice(t)];
    for (const device of devices) expect((await claim(t, members.operator, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
    const [first, second] = devices.map((device) => device.body.deviceId);

    for (const role of ['operator', 'viewer'] as const) {
      expectProblem(await release(members[role], first!), 404, 'NOT_FOUND');
      expectProblem(await reopen(members[role], first!), 404, 'NOT_FOUND');
    }
    expect(await ownerOf(first!)).toBe(organizationId);
    expect((await reopen(members.admin, first!)).response.status).toBe(200);

    expect((await release(members.admin, first!)).response.status).toBe(204);
    expect((await release(members.owner, second!)).response.status).toBe(204);
    expect([await ownerOf(first!), await ownerOf(second!)]).toEqual([null, null]);
    const { rows } = await t.db.query("SELECT device_id, owner_id FROM device_events WHERE type = 'device.released' AND device_id = ANY($1::text[]) ORDER BY device_id", [[first, second]]);
    expect(rows).toEqual([first, second].sort().map((deviceId) => ({ device_id: deviceId, owner_id: organizationId })));
  });

  it('lets an administrator transfer a device to an organization (its members see it), and refuses an unknown organization or both recipients', async () => {
    const admin = await anAdmin(t);
    const { organizationId, members } = await anOrganization();
    const previous = await aCustomer(t);
    const device = await aClaimedDevice(t, previous);
    const transfer = (body: { toEmail?: string; toOrganizationId?: string }) =>
      t.api.POST('/api/v1/admin/devices/{deviceId}/transfer', { params: { path: { deviceId: device.body.deviceId } }, body, headers: admin.headers });

    const unknown = expectProblem(await transfer({ toOrganizationId: '00000000-0000-4000-8000-00000000abcd' }), 422, 'TRANSFER_RECIPIENT_INVALID');
    expect(fieldsOf(unknown)).toEqual(['toOrganizationId']);
    expect(fieldsOf(expectProblem(await transfer({ toEmail: members.owner.email, toOrganizationId: organizationId }), 400, 'VALIDATION_FAILED'))).toEqual(['toOrganizationId']);
    expect(await ownerOf(device.body.deviceId)).toBe(previous.userId);

    const moved = await transfer({ toOrganizationId: organizationId });

    expect(moved.response.status).toBe(200);
    expect(moved.data!.ownerId).toBe(organizationId);
    expect(await ownerOf(device.body.deviceId)).toBe(organizationId);
    expect((await detail(members.viewer, device.body.deviceId)).response.status).toBe(200);
    expectProblem(await detail(previous, device.body.deviceId), 404, 'NOT_FOUND');
  });

  it("lists one organization's devices with organizationId: all of them for a member, page by page, nothing for anyone else", async () => {
    const admin = await anAdmin(t);
    const { organizationId, members } = await anOrganization();
    const stranger = await aCustomer(t);
    const theirs: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const device = await aRegisteredDevice(t);
      expect((await claim(t, members.owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
      theirs.push(device.body.deviceId);
    }
    theirs.sort();
    // The viewer's own device and one shared with nobody stay out of the organization's list.
    await aClaimedDevice(t, members.viewer);
    const list = (who: SignedIn, query: { organizationId: string; limit?: number; cursor?: string }) => t.api.GET('/api/v1/dashboard/devices', { params: { query }, headers: who.headers });

    const first = await list(members.viewer, { organizationId, limit: 2 });
    const second = await list(members.viewer, { organizationId, limit: 2, cursor: first.data!.nextCursor! });

    expect(first.data!.items.map((item) => [item.deviceId, item.access])).toEqual(theirs.slice(0, 2).map((deviceId) => [deviceId, 'viewer']));
    expect(second.data!.items.map((item) => item.deviceId)).toEqual(theirs.slice(2));
    expect(second.data!.nextCursor).toBeNull();
    expect((await list(members.operator, { organizationId })).data!.items.map((item) => [item.deviceId, item.access])).toEqual(theirs.map((deviceId) => [deviceId, 'installer']));
    expect((await list(stranger, { organizationId })).data).toEqual({ items: [], nextCursor: null });
    expect((await list(admin, { organizationId })).data!.items.map((item) => [item.deviceId, item.access])).toEqual(theirs.map((deviceId) => [deviceId, 'admin']));
    expect(fieldsOf(expectProblem(await t.api.GET('/api/v1/dashboard/devices', { params: { query: { organizationId: 'not-a-uuid' } }, headers: members.viewer.headers }), 400, 'VALIDATION_FAILED'))).toEqual(['organizationId']);
  });

  it('shares a device with an organization: every member sees it (its viewers as viewers), until the share or the membership ends', async () => {
    const { organizationId, members, memberIds } = await anOrganization();
    const owner = await aCustomer(t);
    const stranger = await aCustomer(t);
    const device = await aClaimedDevice(t, owner);
    const deviceId = device.body.deviceId;
    const share = (body: { email?: string; organizationId?: string; role: 'viewer' | 'installer' }) =>
      t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId } }, body, headers: owner.headers });
    const access = async (who: SignedIn) => {
      const { data, response } = await detail(who, deviceId);
      return response.status === 200 ? data!.access : response.status;
    };

    expect(fieldsOf(expectProblem(await share({ organizationId: '00000000-0000-4000-8000-00000000beef', role: 'viewer' }), 400, 'VALIDATION_FAILED'))).toEqual(['organizationId']);
    expect(fieldsOf(expectProblem(await share({ organizationId: owner.userId, role: 'viewer' }), 400, 'VALIDATION_FAILED'))).toEqual(['organizationId']);
    expectProblem(await share({ email: stranger.email, organizationId, role: 'viewer' }), 400, 'VALIDATION_FAILED');
    expect((await t.db.query('SELECT 1 FROM device_shares WHERE device_id = $1', [deviceId])).rowCount).toBe(0);

    const created = await share({ organizationId, role: 'installer' });
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({ deviceId, email: null, organizationId, role: 'installer' });
    expect({ owner: await access(members.owner), admin: await access(members.admin), operator: await access(members.operator), viewer: await access(members.viewer), stranger: await access(stranger) }).toEqual({
      owner: 'installer',
      admin: 'installer',
      operator: 'installer',
      viewer: 'viewer',
      stranger: 404,
    });
    expect((await rename(members.operator, deviceId, 'installed by the company')).response.status).toBe(200);
    expectProblem(await rename(members.viewer, deviceId, 'by the viewer'), 403, 'SHARE_ROLE');
    const again = await share({ organizationId, role: 'viewer' });
    expect([again.response.status, again.data!.shareId]).toEqual([200, created.data!.shareId]);
    expect(await access(members.operator)).toBe('viewer');
    const listed = await t.api.GET('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId } }, headers: owner.headers });
    expect(listed.data!.items).toEqual([{ ...again.data }]);

    // A member who leaves loses it; the others keep it until the share is revoked.
    const removed = await t.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId: memberIds.viewer } }, headers: members.owner.headers });
    expect(removed.response.status).toBe(204);
    expect(await access(members.viewer)).toBe(404);
    const revoked = await t.api.DELETE('/api/v1/user/devices/{deviceId}/shares/{shareId}', { params: { path: { deviceId, shareId: created.data!.shareId } }, headers: owner.headers });
    expect(revoked.response.status).toBe(204);
    expect([await access(members.owner), await access(members.operator)]).toEqual([404, 404]);
    expect(await access(owner)).toBe('owner');
  });
});
