import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { anOrganization as anOrganizationOf } from '../support/organizations.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problems.js';
import { startWebhookReceiver, verifiedPayload, type WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * An organization's own integrations: API keys and webhooks its owners and admins manage, which
 * act for the organization (its devices and the shares it holds, nothing of its members' own) and
 * stay when the member who made them leaves. Every role boundary of their routes, through the
 * generated client on real PostgreSQL; deliveries verified by a local Standard Webhooks receiver.
 */


const NOBODYS_ORGANIZATION = '00000000-0000-4000-8000-00000000beef';

describe("an organization's API keys and webhooks", () => {
  let t: TestApp;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', JOB_POLL_INTERVAL_MS: '500' });
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const anOrganization = () => anOrganizationOf(t, 'Fleet Operator GmbH');

  async function aDeviceOf(organizationId: string, by: SignedIn): Promise<string> {
    const device = await aRegisteredDevice(t);
    const claimed = await claim(t, by, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId });
    expect(claimed.response.status).toBe(200);
    return device.body.deviceId;
  }

  const createKey = (who: SignedIn, organizationId: string, scope: 'read' | 'write' = 'read') =>
    t.api.POST('/api/v1/organizations/{organizationId}/api-keys', { params: { path: { organizationId } }, body: { name: `ERP ${scope}`, scope }, headers: who.headers });
  const listKeys = (who: SignedIn, organizationId: string) => t.api.GET('/api/v1/organizations/{organizationId}/api-keys', { params: { path: { organizationId } }, headers: who.headers });
  const revokeKey = (who: SignedIn, organizationId: string, keyId: string) =>
    t.api.DELETE('/api/v1/organizations/{organizationId}/api-keys/{keyId}', { params: { path: { organizationId, keyId } }, headers: who.headers });
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  const listedBy = async (headers: { authorization: string }, organizationId?: string) => {
    const listed = await t.api.GET('/api/v1/dashboard/devices', { params: { query: { limit: 100, ...(organizationId ? { organizationId } : {}) } }, headers });
    expect(listed.response.status).toBe(200);
    return listed.data!.items.map((item) => [item.deviceId, item.access]).sort();
  };
  const detailStatus = async (headers: { authorization: string }, deviceId: string) =>
    (await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers })).response.status;
  const removeMember = async (by: SignedIn, organizationId: string, memberId: string) => {
    const removed = await t.api.DELETE('/api/v1/organizations/{organizationId}/members/{memberId}', { params: { path: { organizationId, memberId } }, headers: by.headers });
    expect(removed.response.status).toBe(204);
  };

  describe('API keys', () => {
    it('are made, listed and revoked by owners and admins only; other members get 403, anyone else 404, a personal organization 409', async () => {
      const { organizationId, members } = await anOrganization();
      const stranger = await aCustomer(t);
      const before = await t.db.query('SELECT key_id FROM api_keys');

      for (const role of ['operator', 'viewer'] as const) {
        expectProblem(await createKey(members[role], organizationId), 403, 'ORGANIZATION_ROLE');
        expectProblem(await listKeys(members[role], organizationId), 403, 'ORGANIZATION_ROLE');
      }
      expectProblem(await createKey(stranger, organizationId), 404, 'NOT_FOUND');
      expectProblem(await createKey(stranger, NOBODYS_ORGANIZATION), 404, 'NOT_FOUND');
      const personal = expectProblem(await createKey(members.owner, members.owner.userId), 409, 'PERSONAL_ORGANIZATION');
      expect(personal.detail).toContain('/api/v1/user/api-keys');
      expect((await t.db.query('SELECT key_id FROM api_keys')).rows).toEqual(before.rows);

      const byOwner = await createKey(members.owner, organizationId);
      const byAdmin = await createKey(members.admin, organizationId, 'write');
      expect([byOwner.response.status, byAdmin.response.status]).toEqual([201, 201]);
      expect(byOwner.data!.key).toMatch(/^dck_[A-Za-z0-9_-]{43}$/);
      const rows = await t.db.query<{ user_id: string | null; organization_id: string }>('SELECT user_id, organization_id FROM api_keys WHERE key_id = ANY($1::uuid[])', [[byOwner.data!.keyId, byAdmin.data!.keyId]]);
      expect(rows.rows).toEqual([
        { user_id: null, organization_id: organizationId },
        { user_id: null, organization_id: organizationId },
      ]);

      // Listed to either, newest first, never the key; not among anyone's own keys.
      const listed = await listKeys(members.admin, organizationId);
      expect(listed.data!.items.map((item) => [item.keyId, item.scope])).toEqual([
        [byAdmin.data!.keyId, 'write'],
        [byOwner.data!.keyId, 'read'],
      ]);
      expect(JSON.stringify(listed.data)).not.toContain(byOwner.data!.key);
      expect((await t.api.GET('/api/v1/user/api-keys', { headers: members.owner.headers })).data!.items).toEqual([]);

      // An account's own key route cannot revoke it, nor can a viewer or another organization's admin.
      expectProblem(await t.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: byOwner.data!.keyId } }, headers: members.owner.headers }), 404, 'NOT_FOUND');
      expectProblem(await revokeKey(members.viewer, organizationId, byOwner.data!.keyId), 403, 'ORGANIZATION_ROLE');
      const other = await anOrganization();
      expectProblem(await revokeKey(other.members.owner, other.organizationId, byOwner.data!.keyId), 404, 'NOT_FOUND');
      expect(await detailStatus(bearer(byOwner.data!.key), 'gw-none')).toBe(404);

      const revoked = await revokeKey(members.admin, organizationId, byOwner.data!.keyId);
      expect(revoked.response.status).toBe(204);
      expectProblem(await t.api.GET('/api/v1/dashboard/devices', { headers: bearer(byOwner.data!.key) }), 401, 'UNAUTHORIZED');
      const audit = await t.db.query<{ action: string; owner_id: string }>('SELECT action, owner_id FROM audit_log WHERE target = $1 ORDER BY id', [`api_key:${byOwner.data!.keyId}`]);
      expect(audit.rows.map((row) => [row.action, row.owner_id])).toEqual([
        ['api_key.created', organizationId],
        ['api_key.revoked', organizationId],
      ]);
    });

    it("act as the organization: its devices and those shared with it, nothing of a member's own", async () => {
      const { organizationId, members } = await anOrganization();
      const own = await aDeviceOf(organizationId, members.operator);
      const membersOwn = (await aClaimedDevice(t, members.admin)).body.deviceId;
      const outsider = await aCustomer(t);
      const shared = (await aClaimedDevice(t, outsider)).body.deviceId;
      const share = await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: shared } }, body: { organizationId, role: 'viewer' }, headers: outsider.headers });
      expect(share.response.status).toBe(201);
      const read = (await createKey(members.admin, organizationId, 'read')).data!.key;

      expect(await listedBy(bearer(read))).toEqual([
        [own, 'owner'],
        [shared, 'viewer'],
      ].sort());
      expect(await listedBy(bearer(read), organizationId)).toEqual([[own, 'owner']]);
      expect(await detailStatus(bearer(read), membersOwn)).toBe(404);
      expect(await detailStatus(bearer(read), shared)).toBe(200);
      // Another organization's list through the filter: nothing.
      const other = await anOrganization();
      await aDeviceOf(other.organizationId, other.members.owner);
      expect(await listedBy(bearer(read), other.organizationId)).toEqual([]);
    });

    it('take their scope: a write key renames (audited as the organization), a read key is refused; a shared viewer role still holds', async () => {
      const { organizationId, members } = await anOrganization();
      const own = await aDeviceOf(organizationId, members.owner);
      const outsider = await aCustomer(t);
      const shared = (await aClaimedDevice(t, outsider)).body.deviceId;
      await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: shared } }, body: { organizationId, role: 'viewer' }, headers: outsider.headers });
      const write = (await createKey(members.owner, organizationId, 'write')).data!;
      const read = (await createKey(members.owner, organizationId, 'read')).data!;
      const rename = (key: string, deviceId: string) => t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body: { name: 'Warehouse' }, headers: bearer(key) });

      expectProblem(await rename(read.key, own), 403, 'API_KEY_SCOPE');
      const renamed = await rename(write.key, own);
      expect(renamed.response.status).toBe(200);
      expect(renamed.data!.name).toBe('Warehouse');
      expectProblem(await rename(write.key, shared), 403, 'SHARE_ROLE');

      const entries = await t.db.query<{ actor_kind: string; actor_user_id: string; actor_api_key_id: string }>(
        "SELECT actor_kind, actor_user_id, actor_api_key_id FROM audit_log WHERE device_id = $1 AND action = 'device.renamed'",
        [own],
      );
      expect(entries.rows).toEqual([{ actor_kind: 'organization', actor_user_id: organizationId, actor_api_key_id: write.keyId }]);
    });

    it("survive the member who made them; that member's own key loses the organization's devices at once", async () => {
      const { organizationId, members, memberIds } = await anOrganization();
      const deviceId = await aDeviceOf(organizationId, members.owner);
      const organizationKey = (await createKey(members.admin, organizationId)).data!.key;
      const adminsOwnKey = (await t.api.POST('/api/v1/user/api-keys', { body: { name: 'my script', scope: 'read' }, headers: members.admin.headers })).data!.key;
      expect([await detailStatus(bearer(organizationKey), deviceId), await detailStatus(bearer(adminsOwnKey), deviceId)]).toEqual([200, 200]);

      await removeMember(members.owner, organizationId, memberIds.admin);

      expect([await detailStatus(bearer(organizationKey), deviceId), await detailStatus(bearer(adminsOwnKey), deviceId)]).toEqual([200, 404]);
      expect(await listedBy(bearer(organizationKey))).toEqual([[deviceId, 'owner']]);
      // The former admin manages the organization's keys no more.
      expectProblem(await listKeys(members.admin, organizationId), 404, 'NOT_FOUND');
    });

    it('go with their organization', async () => {
      const owner = await aCustomer(t);
      const created = await t.api.POST('/api/v1/organizations', { body: { name: 'Short-lived' }, headers: owner.headers });
      const organizationId = created.data!.organizationId;
      const key = (await createKey(owner, organizationId)).data!;

      const deleted = await t.api.DELETE('/api/v1/organizations/{organizationId}', { params: { path: { organizationId } }, headers: owner.headers });
      expect(deleted.response.status).toBe(204);

      expect((await t.db.query('SELECT 1 FROM api_keys WHERE key_id = $1', [key.keyId])).rowCount).toBe(0);
      expectProblem(await t.api.GET('/api/v1/dashboard/devices', { headers: bearer(key.key) }), 401, 'UNAUTHORIZED');
    });
  });

  describe('audit log', () => {
    const auditOf = (who: SignedIn, organizationId: string, query: { limit?: number; cursor?: string } = {}) =>
      t.api.GET('/api/v1/organizations/{organizationId}/audit', { params: { path: { organizationId }, query }, headers: who.headers });

    it("holds the organization's own entries and its devices', for owners and admins, and keeps them when the member who acted leaves", async () => {
      const { organizationId, members, memberIds } = await anOrganization();
      const stranger = await aCustomer(t);
      const deviceId = await aDeviceOf(organizationId, members.operator);
      const membersOwn = (await aClaimedDevice(t, members.admin)).body.deviceId;
      const key = (await createKey(members.admin, organizationId, 'write')).data!;
      const renamed = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body: { name: 'Depot' }, headers: bearer(key.key) });
      expect(renamed.response.status).toBe(200);
      await removeMember(members.owner, organizationId, memberIds.admin);

      expectProblem(await auditOf(members.operator, organizationId), 403, 'ORGANIZATION_ROLE');
      expectProblem(await auditOf(members.viewer, organizationId), 403, 'ORGANIZATION_ROLE');
      expectProblem(await auditOf(stranger, organizationId), 404, 'NOT_FOUND');
      expectProblem(await auditOf(members.admin, organizationId), 404, 'NOT_FOUND');

      const page = await auditOf(members.owner, organizationId, { limit: 100 });
      expect(page.response.status).toBe(200);
      const seen = page.data!.items.map((entry) => [entry.action, entry.actor.kind, entry.deviceId]).reverse();
      expect(seen).toEqual([
        ['organization.created', 'user', null],
        ['organization.member_invited', 'user', null],
        ['organization.member_invited', 'user', null],
        ['organization.member_invited', 'user', null],
        ['device.claimed', 'user', deviceId],
        ['api_key.created', 'user', null],
        ['device.renamed', 'organization', deviceId],
        ['organization.member_removed', 'user', null],
      ]);
      expect(page.data!.items.some((entry) => entry.deviceId === membersOwn)).toBe(false);
      // Paged like every list: two at a time, the same entries.
      const paged: string[] = [];
      let cursor: string | undefined;
      do {
        const next = await auditOf(members.owner, organizationId, { limit: 2, ...(cursor ? { cursor } : {}) });
        paged.push(...next.data!.items.map((entry) => entry.id));
        cursor = next.data!.nextCursor ?? undefined;
      } while (cursor);
      expect(paged).toEqual(page.data!.items.map((entry) => entry.id));
    });

    it("gives a device's own log to the owners and admins of the organization that owns it, not to its operators", async () => {
      const { organizationId, members } = await anOrganization();
      const deviceId = await aDeviceOf(organizationId, members.operator);
      const deviceAudit = (who: SignedIn) => t.api.GET('/api/v1/dashboard/devices/{deviceId}/audit', { params: { path: { deviceId } }, headers: who.headers });

      for (const role of ['owner', 'admin'] as const) {
        const read = await deviceAudit(members[role]);
        expect(read.response.status).toBe(200);
        expect(read.data!.items.map((entry) => entry.action)).toEqual(['device.claimed']);
      }
      expectProblem(await deviceAudit(members.operator), 404, 'NOT_FOUND');
      expectProblem(await deviceAudit(members.viewer), 404, 'NOT_FOUND');
    });
  });

  describe('webhooks', () => {
    const createWebhook = (who: SignedIn, organizationId: string, path: string) =>
      t.api.POST('/api/v1/organizations/{organizationId}/webhooks', { params: { path: { organizationId } }, body: { url: `${receiver.origin}${path}`, types: ['device.claimed', 'device.released'] }, headers: who.headers });
    const claimedIn = (path: string, deviceId: string) => receiver.requestsTo(path).filter((request) => request.body.includes(`"deviceId":"${deviceId}"`) && request.body.includes('"device.claimed"'));

    it('are registered, listed, tested and deleted by owners and admins only', async () => {
      const { organizationId, members } = await anOrganization();
      const stranger = await aCustomer(t);

      expectProblem(await createWebhook(members.operator, organizationId, '/org-operator'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await createWebhook(members.viewer, organizationId, '/org-viewer'), 403, 'ORGANIZATION_ROLE');
      expectProblem(await createWebhook(stranger, organizationId, '/org-stranger'), 404, 'NOT_FOUND');
      expectProblem(await createWebhook(members.owner, members.owner.userId, '/org-personal'), 409, 'PERSONAL_ORGANIZATION');
      expect((await t.db.query('SELECT 1 FROM webhooks WHERE organization_id = $1', [organizationId])).rowCount).toBe(0);

      const created = await createWebhook(members.admin, organizationId, '/org-managed');
      expect(created.response.status).toBe(201);
      receiver.trust('/org-managed', created.data!.secret);
      const webhookId = created.data!.webhookId;
      const listed = await t.api.GET('/api/v1/organizations/{organizationId}/webhooks', { params: { path: { organizationId } }, headers: members.owner.headers });
      expect(listed.data!.items.map((item) => item.webhookId)).toEqual([webhookId]);
      expect(JSON.stringify(listed.data)).not.toContain(created.data!.secret);
      expect((await t.api.GET('/api/v1/user/webhooks', { headers: members.admin.headers })).data!.items).toEqual([]);

      const tested = await t.api.POST('/api/v1/organizations/{organizationId}/webhooks/{webhookId}/test', { params: { path: { organizationId, webhookId } }, headers: members.owner.headers });
      expect(tested.response.status).toBe(202);
      await eventually(() => expect(receiver.requestsTo('/org-managed')).toHaveLength(1));
      expect(verifiedPayload(created.data!.secret, receiver.requestsTo('/org-managed')[0])).toMatchObject({ type: 'webhook.test', data: { webhookId } });

      expectProblem(await t.api.DELETE('/api/v1/user/webhooks/{webhookId}', { params: { path: { webhookId } }, headers: members.admin.headers }), 404, 'NOT_FOUND');
      expectProblem(
        await t.api.DELETE('/api/v1/organizations/{organizationId}/webhooks/{webhookId}', { params: { path: { organizationId, webhookId } }, headers: members.operator.headers }),
        403,
        'ORGANIZATION_ROLE',
      );
      const deleted = await t.api.DELETE('/api/v1/organizations/{organizationId}/webhooks/{webhookId}', { params: { path: { organizationId, webhookId } }, headers: members.owner.headers });
      expect(deleted.response.status).toBe(204);
      expect((await t.db.query('SELECT 1 FROM webhooks WHERE webhook_id = $1', [webhookId])).rowCount).toBe(0);
    });

    it("receive the organization's device events, not its members' own, and keep receiving after the member who registered them left", async () => {
      const { organizationId, members, memberIds } = await anOrganization();
      const created = await createWebhook(members.admin, organizationId, '/org-events');
      receiver.trust('/org-events', created.data!.secret);
      const personal = await t.api.POST('/api/v1/user/webhooks', { body: { url: `${receiver.origin}/member-own`, types: ['device.claimed'] }, headers: members.operator.headers });
      receiver.trust('/member-own', personal.data!.secret);

      const first = await aDeviceOf(organizationId, members.operator);
      const membersOwn = (await aClaimedDevice(t, members.admin)).body.deviceId;
      await eventually(() => expect(claimedIn('/org-events', first)).toHaveLength(1));
      expect(verifiedPayload(created.data!.secret, claimedIn('/org-events', first)[0])).toMatchObject({ type: 'device.claimed', data: { deviceId: first } });

      await removeMember(members.owner, organizationId, memberIds.admin);
      const second = await aDeviceOf(organizationId, members.owner);
      const operatorsOwn = (await aClaimedDevice(t, members.operator)).body.deviceId;
      await eventually(() => expect(claimedIn('/org-events', second)).toHaveLength(1));
      await eventually(() => expect(claimedIn('/member-own', operatorsOwn)).toHaveLength(1));

      // Nothing of the member's own device reached the organization's webhook; nothing of the
      // organization's devices reached the member's own.
      expect(claimedIn('/org-events', membersOwn)).toEqual([]);
      expect(claimedIn('/member-own', first)).toEqual([]);
      expect(claimedIn('/member-own', second)).toEqual([]);
    });
  });
});
