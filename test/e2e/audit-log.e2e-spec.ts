import { randomBytes } from 'node:crypto';
import type { components, paths } from '@device-cloud/client';
import { bearer } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';

type Entry = components['schemas']['AuditEntryResponse'];
type AdminQuery = NonNullable<paths['/api/v1/admin/audit']['get']['parameters']['query']>;
type Headers = Record<string, string>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The request as it comes through the trusted proxy from `address`. */
const via = (who: { headers: { authorization: string } }, address: string): Headers => ({ ...who.headers, 'x-forwarded-for': address });

/** A documentation address (RFC 5737) no other request of this file uses. */
let lastOctet = 10;
const anAddress = () => `198.51.100.${lastOctet++}`;

function adminAudit(t: TestApp, who: Headers, query: AdminQuery = {}) {
  return t.api.GET('/api/v1/admin/audit', { params: { query }, headers: who });
}

function deviceAudit(t: TestApp, who: Headers, deviceId: string, query: { limit?: number; cursor?: string } = {}) {
  return t.api.GET('/api/v1/dashboard/devices/{deviceId}/audit', { params: { path: { deviceId }, query }, headers: who });
}

/** Every page of the admin list for `query`, newest first. */
async function allAdminEntries(t: TestApp, who: Headers, query: AdminQuery): Promise<Entry[]> {
  const entries: Entry[] = [];
  let cursor: string | null | undefined;
  do {
    const { data, response } = await adminAudit(t, who, { ...query, ...(cursor ? { cursor } : {}) });
    if (response.status !== 200 || !data) throw new Error(`the audit list answered ${response.status}`);
    entries.push(...data.items);
    cursor = data.nextCursor;
  } while (cursor);
  return entries;
}

async function auditCount(t: TestApp): Promise<number> {
  return (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log')).rows[0].n;
}

describe('The audit log', () => {
  let t: TestApp;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, TRUST_PROXY: '127.0.0.1' });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('records actor, action, target, time and client address of every change, in its own transaction', async () => {
    const owner = await aCustomer(t);
    const started = Date.now();
    const device = await aRegisteredDevice(t);
    const { deviceId } = device.body;
    const path = { deviceId };
    const expected: Array<{ action: string; actor: Entry['actor']; target: string; clientAddress: string; deviceId: string | null; detail?: object }> = [];
    const asOwner = { kind: 'user' as const, userId: owner.userId, apiKeyId: null };
    const asAdmin = { kind: 'admin' as const, userId: admin.userId, apiKeyId: null };
    const did = (action: string, actor: Entry['actor'], target: string, clientAddress: string, withDevice: boolean, detail?: object) =>
      expected.push({ action, actor, target, clientAddress, deviceId: withDevice ? deviceId : null, ...(detail ? { detail } : {}) });

    let address = anAddress();
    expect((await t.api.POST('/api/v1/user/devices/claim', { body: { deviceId, claimCode: device.body.claimCode }, headers: via(owner, address) })).response.status).toBe(200);
    did('device.claimed', asOwner, `device:${deviceId}`, address, true);

    address = anAddress();
    const created = await t.api.POST('/api/v1/user/api-keys', { body: { name: 'home automation', scope: 'write' }, headers: via(owner, address) });
    const key = created.data!;
    did('api_key.created', asOwner, `api_key:${key.keyId}`, address, false, { name: 'home automation', scope: 'write' });

    address = anAddress();
    const renamed = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path }, body: { name: 'Garage', tags: ['Home'] }, headers: { ...bearer(key.key), 'x-forwarded-for': address } });
    expect(renamed.response.status).toBe(200);
    did('device.renamed', { kind: 'user', userId: owner.userId, apiKeyId: key.keyId }, `device:${deviceId}`, address, true, { name: 'Garage', tags: ['home'] });

    address = anAddress();
    const sharee = `installer-${randomBytes(4).toString('hex')}@example.com`;
    const shared = await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path }, body: { email: sharee, role: 'viewer' }, headers: via(owner, address) });
    expect(shared.response.status).toBe(201);
    const shareId = shared.data!.shareId;
    did('share.created', asOwner, `share:${shareId}`, address, true, { email: sharee, role: 'viewer' });

    // A second share to the same address changes the role: recorded as the share it now is.
    address = anAddress();
    expect((await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path }, body: { email: sharee, role: 'installer' }, headers: via(owner, address) })).response.status).toBe(200);
    did('share.created', asOwner, `share:${shareId}`, address, true, { email: sharee, role: 'installer' });

    address = anAddress();
    expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}/shares/{shareId}', { params: { path: { deviceId, shareId } }, headers: via(owner, address) })).response.status).toBe(204);
    did('share.revoked', asOwner, `share:${shareId}`, address, true);

    address = anAddress();
    expect((await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path }, body: { telemetryIntervalSec: 30 }, headers: via(owner, address) })).response.status).toBe(200);
    did('device.config_changed', asOwner, `device:${deviceId}`, address, true, { patch: { telemetryIntervalSec: 30 } });

    address = anAddress();
    const rules = [{ ruleId: 'soc-now', metric: 'soc', op: 'below' as const, threshold: 20, clearAt: 25, forSec: 0, enabled: true }];
    expect((await t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path }, body: { rules }, headers: via(owner, address) })).response.status).toBe(200);
    did('alert_rules.changed', asOwner, `device:${deviceId}`, address, true, { ruleIds: ['soc-now'] });

    address = anAddress();
    expect((await t.api.DELETE('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path }, headers: via(owner, address) })).response.status).toBe(200);
    did('alert_rules.changed', asOwner, `device:${deviceId}`, address, true, { inherited: true });

    address = anAddress();
    expect((await t.api.PATCH('/api/v1/admin/config/defaults', { body: { uploadBatchSize: 40 }, headers: via(admin, address) })).response.status).toBe(200);
    did('config.defaults_changed', asAdmin, 'config_defaults', address, false, { patch: { uploadBatchSize: 40 } });

    address = anAddress();
    expect((await t.api.PUT('/api/v1/admin/alert-rules/defaults', { body: { rules }, headers: via(admin, address) })).response.status).toBe(200);
    did('alert_rules.defaults_changed', asAdmin, 'alert_rule_defaults', address, false, { ruleIds: ['soc-now'] });

    address = anAddress();
    const firmware = { version: '9.9.1', url: `https://fw.example.com/${randomBytes(4).toString('hex')}.bin`, sha256: randomBytes(32).toString('hex'), size: 1024 };
    const release = (await t.api.POST('/api/v1/admin/firmware', { body: firmware, headers: via(admin, address) })).data!;
    did('firmware.release_created', asAdmin, `firmware_release:${release.id}`, address, false, { version: '9.9.1', hardwareId: null, channel: 'stable', rolloutPercent: 100 });

    address = anAddress();
    expect((await t.api.PATCH('/api/v1/admin/firmware/{id}', { params: { path: { id: release.id } }, body: { paused: true }, headers: via(admin, address) })).response.status).toBe(200);
    did('firmware.release_changed', asAdmin, `firmware_release:${release.id}`, address, false, { version: '9.9.1', paused: true });

    address = anAddress();
    expect((await t.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: key.keyId } }, headers: via(owner, address) })).response.status).toBe(204);
    did('api_key.revoked', asOwner, `api_key:${key.keyId}`, address, false, { name: 'home automation', scope: 'write' });

    address = anAddress();
    expect((await t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', { params: { path }, headers: via(owner, address) })).response.status).toBe(200);
    did('device.re_registration_opened', asOwner, `device:${deviceId}`, address, true);

    address = anAddress();
    expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path }, headers: via(owner, address) })).response.status).toBe(204);
    did('device.released', asOwner, `device:${deviceId}`, address, true);

    const next = await aCustomer(t);
    address = anAddress();
    expect((await t.api.POST('/api/v1/admin/devices/{deviceId}/transfer', { params: { path }, body: { toEmail: next.email }, headers: via(admin, address) })).response.status).toBe(200);
    did('device.transferred', asAdmin, `device:${deviceId}`, address, true, { ownerId: next.userId, previousOwnerId: null });

    address = anAddress();
    expect((await t.api.POST('/api/v1/admin/devices/{deviceId}/decommission', { params: { path }, headers: via(admin, address) })).response.status).toBe(200);
    did('device.decommissioned', asAdmin, `device:${deviceId}`, address, true, { previousOwnerId: next.userId });

    address = anAddress();
    expect((await t.api.POST('/api/v1/admin/devices/{deviceId}/reopen', { params: { path }, headers: via(admin, address) })).response.status).toBe(200);
    did('device.reopened', asAdmin, `device:${deviceId}`, address, true);
    const finished = Date.now();

    const entries = (await allAdminEntries(t, admin.headers, { from: new Date(started - 1000).toISOString() })).reverse();
    const ours = entries.filter((entry) => entry.deviceId === deviceId || entry.target.includes(key.keyId) || entry.target.includes(release.id) || entry.target.endsWith('_defaults'));
    expect(ours).toEqual(
      expected.map((entry) => ({
        id: expect.stringMatching(/^[1-9][0-9]*$/),
        at: expect.any(String),
        detail: entry.detail ?? expect.any(Object),
        ...entry,
      })),
    );
    for (const entry of ours) {
      const at = new Date(entry.at).getTime();
      expect(at).toBeGreaterThanOrEqual(started - 5);
      expect(at).toBeLessThanOrEqual(finished + 5);
    }
    // Never a secret: the key itself, the claim code, the device secret.
    const { rows: everything } = await t.db.query('SELECT detail, target FROM audit_log');
    const text = JSON.stringify(everything);
    expect(text).not.toContain(key.key.slice(4));
    expect(text).not.toContain(device.body.claimCode!);
    expect(text).not.toContain(device.registered.deviceSecret);
  });

  it('records nothing for a refused or failed change', async () => {
    const [owner, stranger] = [await aCustomer(t), await aCustomer(t)];
    const device = await aClaimedDevice(t, owner);
    const { deviceId } = device.body;
    const before = await auditCount(t);

    expectProblem(await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, body: { telemetryIntervalSec: 1 }, headers: owner.headers }), 400, 'VALIDATION_FAILED');
    expectProblem(await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, body: { telemetryIntervalSec: 30 }, headers: stranger.headers }), 404, 'NOT_FOUND');
    expectProblem(await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body: { name: '' }, headers: owner.headers }), 400, 'VALIDATION_FAILED');
    expectProblem(await claim(t, stranger, { deviceId, claimCode: device.body.claimCode }), 409, 'DEVICE_ALREADY_CLAIMED');
    expectProblem(await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId } }, headers: stranger.headers }), 404, 'NOT_FOUND');
    expectProblem(await t.api.PATCH('/api/v1/admin/config/defaults', { body: { uploadBatchSize: 0 }, headers: admin.headers }), 400, 'VALIDATION_FAILED');
    // Unchanged configuration: no change, no entry.
    await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, body: { logLevel: 'info' }, headers: owner.headers });
    const afterFirst = await auditCount(t);
    await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, body: { logLevel: 'info' }, headers: owner.headers });

    expect(afterFirst).toBe(before + 1);
    expect(await auditCount(t)).toBe(afterFirst);
  });

  it('commits the change and its entry together: when the entry cannot be written, the change is rolled back', async () => {
    const owner = await aCustomer(t);
    const { deviceId } = (await aClaimedDevice(t, owner)).body;
    const { rows: before } = await t.db.query('SELECT name, config_overrides, config_revision FROM devices WHERE device_id = $1', [deviceId]);
    // A planted fault: the log refuses this device's entries.
    await t.db.query(`ALTER TABLE audit_log ADD CONSTRAINT audit_log_planted_fault CHECK (device_id IS DISTINCT FROM '${deviceId}') NOT VALID`);
    try {
      // Plain fetch: a 500 is no answer of the contract, which the generated client checks.
      const send = (method: string, url: string, body?: object) =>
        fetch(`${t.baseUrl}${url}`, { method, headers: { ...owner.headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body && JSON.stringify(body) });
      const statuses = [
        (await send('PATCH', `/api/v1/dashboard/devices/${deviceId}`, { name: 'Never' })).status,
        (await send('PATCH', `/api/v1/dashboard/devices/${deviceId}/config`, { telemetryIntervalSec: 45 })).status,
        (await send('DELETE', `/api/v1/user/devices/${deviceId}`)).status,
      ];

      expect(statuses).toEqual([500, 500, 500]);
    } finally {
      await t.db.query('ALTER TABLE audit_log DROP CONSTRAINT audit_log_planted_fault');
    }
    const { rows: after } = await t.db.query('SELECT name, config_overrides, config_revision FROM devices WHERE device_id = $1', [deviceId]);
    expect(after).toEqual(before);
    expect((await t.db.query('SELECT owner_id FROM devices WHERE device_id = $1', [deviceId])).rows[0].owner_id).toBe(owner.userId);
    expect((await t.db.query("SELECT count(*)::int AS n FROM device_events WHERE device_id = $1 AND type = 'device.released'", [deviceId])).rows[0].n).toBe(0);
  });

  describe('GET /api/v1/dashboard/devices/{deviceId}/audit', () => {
    it('shows the owner their own ownership only: nothing of the previous owner, administrators unnamed', async () => {
      const [first, second] = [await aCustomer(t), await aCustomer(t)];
      const device = await aClaimedDevice(t, first);
      const { deviceId } = device.body;
      const path = { deviceId };
      await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path }, body: { name: 'First’s' }, headers: first.headers });
      expect((await deviceAudit(t, first.headers, deviceId)).data!.items.map((entry) => entry.action)).toEqual(['device.renamed', 'device.claimed']);
      await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path }, headers: first.headers });

      const address = anAddress();
      expect((await claim(t, second, { deviceId, claimCode: device.body.claimCode })).response.status).toBe(200);
      await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path }, body: { logLevel: 'debug' }, headers: via(admin, address) });

      const { data, response } = await deviceAudit(t, second.headers, deviceId);

      expect(response.status).toBe(200);
      expect(data!.items.map((entry) => entry.action)).toEqual(['device.config_changed', 'device.claimed']);
      expect(data!.items[0]).toMatchObject({ actor: { kind: 'admin', userId: null, apiKeyId: null }, clientAddress: null, detail: { patch: { logLevel: 'debug' } } });
      expect(data!.items[1]).toMatchObject({ actor: { kind: 'user', userId: second.userId, apiKeyId: null }, target: `device:${deviceId}` });
      expect(JSON.stringify(data)).not.toContain(first.userId);
      // The previous owner's entries are still there, for administrators.
      const forAdmin = await allAdminEntries(t, admin.headers, { deviceId });
      expect(forAdmin.map((entry) => entry.action)).toEqual(['device.config_changed', 'device.claimed', 'device.released', 'device.renamed', 'device.claimed']);
      expect(forAdmin[0]).toMatchObject({ actor: { kind: 'admin', userId: admin.userId }, clientAddress: address });
    });

    it('is 404 for anyone but the owner (the previous owner, a stranger, an administrator) and refuses API keys', async () => {
      const [owner, stranger] = [await aCustomer(t), await aCustomer(t)];
      const { deviceId } = (await aClaimedDevice(t, owner)).body;
      const { data: key } = await t.api.POST('/api/v1/user/api-keys', { body: { name: 'reader', scope: 'read' }, headers: owner.headers });

      expectProblem(await deviceAudit(t, stranger.headers, deviceId), 404, 'NOT_FOUND');
      expectProblem(await deviceAudit(t, admin.headers, deviceId), 404, 'NOT_FOUND');
      expectProblem(await deviceAudit(t, owner.headers, 'gw-no-such-device'), 404, 'NOT_FOUND');
      expectProblem(await deviceAudit(t, bearer(key!.key), deviceId), 403, 'API_KEY_SCOPE');
      expectProblem(await deviceAudit(t, owner.headers, 'bad id!'), 400, 'VALIDATION_FAILED');
      expectProblem(await deviceAudit(t, owner.headers, deviceId, { cursor: 'bm90LWEtY3Vyc29y' }), 400, 'VALIDATION_FAILED');
      expectProblem(await deviceAudit(t, {}, deviceId), 401, 'UNAUTHORIZED');
      await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId } }, headers: owner.headers });
      expectProblem(await deviceAudit(t, owner.headers, deviceId), 404, 'NOT_FOUND');
    });

    it('pages newest first with limit and cursor', async () => {
      const owner = await aCustomer(t);
      const { deviceId } = (await aClaimedDevice(t, owner)).body;
      for (const name of ['one', 'two', 'three']) await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body: { name }, headers: owner.headers });

      const first = await deviceAudit(t, owner.headers, deviceId, { limit: 3 });
      const second = await deviceAudit(t, owner.headers, deviceId, { limit: 3, cursor: first.data!.nextCursor! });

      expect([...first.data!.items, ...second.data!.items].map((entry) => entry.detail)).toEqual([{ name: 'three' }, { name: 'two' }, { name: 'one' }, {}]);
      expect(second.data!.nextCursor).toBeNull();
    });
  });

  describe('GET /api/v1/admin/audit', () => {
    it('filters by deviceId, actorId, action, from and to, and pages with a cursor', async () => {
      const [alice, bob] = [await aCustomer(t), await aCustomer(t)];
      const a = (await aClaimedDevice(t, alice)).body.deviceId;
      const b = (await aClaimedDevice(t, bob)).body.deviceId;
      const middle = new Date().toISOString();
      await new Promise((resolve) => setTimeout(resolve, 5));
      await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: a } }, body: { name: 'A' }, headers: alice.headers });
      await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: b } }, body: { name: 'B' }, headers: bob.headers });
      const end = new Date(Date.now() + 1).toISOString();

      const byDevice = await allAdminEntries(t, admin.headers, { deviceId: a });
      expect(byDevice.map((entry) => [entry.deviceId, entry.action])).toEqual([
        [a, 'device.renamed'],
        [a, 'device.claimed'],
      ]);
      const byActor = await allAdminEntries(t, admin.headers, { actorId: bob.userId });
      expect(byActor.map((entry) => entry.action)).toEqual(['device.renamed', 'device.claimed']);
      expect(byActor.every((entry) => entry.actor.userId === bob.userId)).toBe(true);
      const claims = await allAdminEntries(t, admin.headers, { action: 'device.claimed', actorId: alice.userId });
      expect(claims.map((entry) => [entry.deviceId, entry.action])).toEqual([[a, 'device.claimed']]);
      const window = await allAdminEntries(t, admin.headers, { from: middle, to: end });
      expect(window.filter((entry) => [a, b].includes(entry.deviceId!)).map((entry) => [entry.deviceId, entry.action])).toEqual([
        [b, 'device.renamed'],
        [a, 'device.renamed'],
      ]);
      const both = await allAdminEntries(t, admin.headers, { action: 'device.renamed,device.claimed', actorId: alice.userId, limit: 1 });
      expect(both.map((entry) => entry.action)).toEqual(['device.renamed', 'device.claimed']);
      expect(both.map((entry) => entry.actor.userId)).toEqual([alice.userId, alice.userId]);
      expect(both.every((entry) => UUID.test(entry.actor.userId!))).toBe(true);

      // Pages of 2 list every entry once, in order.
      const whole = await allAdminEntries(t, admin.headers, { limit: 200 });
      const paged = await allAdminEntries(t, admin.headers, { limit: 2 });
      expect(paged.map((entry) => entry.id)).toEqual(whole.map((entry) => entry.id));
      expect(new Set(paged.map((entry) => entry.id)).size).toBe(paged.length);
    });

    it('refuses bad filters with 400 naming them, customers with 403 and API keys with 403 API_KEY_SCOPE', async () => {
      const customer = await aCustomer(t);
      const { data: key } = await t.api.POST('/api/v1/user/api-keys', { body: { name: 'admin key', scope: 'read' }, headers: admin.headers });

      for (const [query, field] of [
        [{ action: 'device.exploded' }, 'action'],
        [{ actorId: 'not-a-uuid' }, 'actorId'],
        [{ from: '2026-02-30T00:00:00Z' }, 'from'],
        [{ to: 'yesterday' }, 'to'],
        [{ from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z' }, 'from'],
        [{ deviceId: 'bad id!' }, 'deviceId'],
        [{ limit: 0 }, 'limit'],
        [{ limit: 201 }, 'limit'],
        [{ cursor: 'bm90LWEtY3Vyc29y' }, 'cursor'],
      ] as const) {
        const problem = expectProblem(await adminAudit(t, admin.headers, query as AdminQuery), 400, 'VALIDATION_FAILED');
        expect(problem.errors?.map((error) => error.field)).toContain(field);
      }
      expectProblem(await adminAudit(t, customer.headers), 403, 'FORBIDDEN');
      expectProblem(await adminAudit(t, bearer(key!.key)), 403, 'API_KEY_SCOPE');
      expectProblem(await adminAudit(t, {}), 401, 'UNAUTHORIZED');
    });
  });
});
