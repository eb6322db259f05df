import { aRegistration, bearer, getMe, login, refresh } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, aRegisteredDevice, claim, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, startTwoInstances, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problems.js';

type Headers = { authorization: string };

function transfer(t: TestApp, who: Headers, deviceId: string, toEmail: string) {
  return t.api.POST('/api/v1/admin/devices/{deviceId}/transfer', { params: { path: { deviceId } }, body: { toEmail }, headers: who });
}

function decommission(t: TestApp, who: Headers, deviceId: string) {
  return t.api.POST('/api/v1/admin/devices/{deviceId}/decommission', { params: { path: { deviceId } }, headers: who });
}

function reopen(t: TestApp, who: Headers, deviceId: string) {
  return t.api.POST('/api/v1/admin/devices/{deviceId}/reopen', { params: { path: { deviceId } }, headers: who });
}

function dashboardDevice(t: TestApp, who: Headers, deviceId: string) {
  return t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers: who });
}

async function count(t: TestApp, sql: string, values: unknown[]): Promise<number> {
  return (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) AS q`, values)).rows[0].n;
}

const auditOf = (t: TestApp, deviceId: string, action: string) => count(t, 'SELECT 1 FROM audit_log WHERE device_id = $1 AND action = $2', [deviceId, action]);
const eventsOf = (t: TestApp, deviceId: string) => t.db.query<{ type: string; owner_id: string | null }>('SELECT type, owner_id FROM device_events WHERE device_id = $1 ORDER BY id', [deviceId]);

describe('Administrators transfer and decommission devices', () => {
  let t: TestApp;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp(ADMIN_SETTINGS);
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('POST /api/v1/admin/devices/{deviceId}/transfer', () => {
    it('gives the device to the verified account: the new owner sees it from the transfer on, the old owner gets 404', async () => {
      const [previous, next] = [await aCustomer(t), await aCustomer(t)];
      const device = await aClaimedDevice(t, previous);
      const { deviceId } = device.body;
      const before = new Date(Date.now() - 60_000).toISOString();
      const upload = await t.api.POST('/api/v1/telemetry', { body: { records: [{ ts: before, metrics: { soc: 42 } }] }, headers: bearer(device.registered.accessToken) });
      expect(upload.response.status).toBe(200);

      const moved = await transfer(t, admin.headers, deviceId, next.email.toUpperCase());

      expect(moved.response.status).toBe(200);
      expect(moved.data).toEqual({ deviceId, ownerId: next.userId, claimedAt: expect.any(String) });
      const row = await ownedDeviceRow(t.db, deviceId);
      expect(row).toMatchObject({ owner_id: next.userId, visible_since: new Date(moved.data!.claimedAt), last_released_at: new Date(moved.data!.claimedAt) });
      expect((await dashboardDevice(t, next.headers, deviceId)).response.status).toBe(200);
      expectProblem(await dashboardDevice(t, previous.headers, deviceId), 404, 'NOT_FOUND');
      const { data: previousList } = await t.api.GET('/api/v1/user/devices', { headers: previous.headers });
      expect(previousList!.items.map((item) => item.deviceId)).not.toContain(deviceId);

      // History window: the new owner does not read what the device sent under the previous owner.
      const range = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date().toISOString(), bucket: 'raw' };
      const history = (who: Headers) => t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', { params: { path: { deviceId }, query: range }, headers: who });
      expect((await history(next.headers)).data!.records).toEqual([]);
      expect((await history(admin.headers)).data!.records).toHaveLength(1);
      const audit = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/audit', { params: { path: { deviceId } }, headers: next.headers });
      expect(audit.data!.items.map((item) => item.action)).toEqual(['device.transferred']);
      expect(JSON.stringify(audit.data)).not.toContain(previous.userId);

      // Like a release and a claim: each owner hears of it.
      expect((await eventsOf(t, deviceId)).rows.slice(-2)).toEqual([
        { type: 'device.released', owner_id: previous.userId },
        { type: 'device.claimed', owner_id: next.userId },
      ]);
      const { rows: entries } = await t.db.query('SELECT actor_kind, actor_user_id, owner_id, target, detail FROM audit_log WHERE device_id = $1 AND action = $2', [deviceId, 'device.transferred']);
      expect(entries).toEqual([{ actor_kind: 'admin', actor_user_id: admin.userId, owner_id: next.userId, target: `device:${deviceId}`, detail: { ownerId: next.userId, previousOwnerId: previous.userId } }]);
    });

    it('is idempotent: transferring to the current owner changes and records nothing', async () => {
      const owner = await aCustomer(t);
      const { deviceId } = (await aClaimedDevice(t, owner)).body;
      const rowBefore = await ownedDeviceRow(t.db, deviceId);
      const eventsBefore = (await eventsOf(t, deviceId)).rows.length;

      const first = await transfer(t, admin.headers, deviceId, owner.email);
      const second = await transfer(t, admin.headers, deviceId, owner.email);

      expect(first.data).toEqual(second.data);
      expect(first.data).toEqual({ deviceId, ownerId: owner.userId, claimedAt: rowBefore!.claimed_at!.toISOString() });
      expect(await ownedDeviceRow(t.db, deviceId)).toEqual(rowBefore);
      expect((await eventsOf(t, deviceId)).rows).toHaveLength(eventsBefore);
      expect(await auditOf(t, deviceId, 'device.transferred')).toBe(0);
    });

    it('works for an unowned device, which the new owner sees whole, as after a first claim', async () => {
      const owner = await aCustomer(t);
      const { deviceId } = (await aRegisteredDevice(t)).body;

      const moved = await transfer(t, admin.headers, deviceId, owner.email);

      expect(moved.response.status).toBe(200);
      expect(await ownedDeviceRow(t.db, deviceId)).toMatchObject({ owner_id: owner.userId, visible_since: null });
      expect((await eventsOf(t, deviceId)).rows).toEqual([{ type: 'device.claimed', owner_id: owner.userId }]);
    });

    it('answers a plain problem for an unknown or unverified address and an unknown device, and changes nothing', async () => {
      const [owner, unverified] = [await aCustomer(t), await aCustomer(t, { verified: false })];
      const { deviceId } = (await aClaimedDevice(t, owner)).body;
      const rowBefore = await ownedDeviceRow(t.db, deviceId);
      const auditBefore = await count(t, 'SELECT 1 FROM audit_log', []);

      const unknown = expectProblem(await transfer(t, admin.headers, deviceId, 'nobody-here@example.com'), 422, 'TRANSFER_RECIPIENT_INVALID');
      expect(unknown.detail).toBe('No account has this e-mail address.');
      const notVerified = expectProblem(await transfer(t, admin.headers, deviceId, unverified.email), 422, 'TRANSFER_RECIPIENT_INVALID');
      expect(notVerified.errors).toEqual([{ field: 'toEmail', message: expect.stringMatching(/not confirmed/) }]);
      expectProblem(await transfer(t, admin.headers, 'gw-no-such-device', owner.email), 404, 'NOT_FOUND');
      expectProblem(await transfer(t, admin.headers, deviceId, 'not an address'), 400, 'VALIDATION_FAILED');
      expectProblem(await transfer(t, admin.headers, 'bad id!', owner.email), 400, 'VALIDATION_FAILED');
      expectProblem(
        await t.api.POST('/api/v1/admin/devices/{deviceId}/transfer', { params: { path: { deviceId } }, body: { toEmail: owner.email, extra: 1 } as never, headers: admin.headers }),
        400,
        'VALIDATION_FAILED',
      );

      expect(await ownedDeviceRow(t.db, deviceId)).toEqual(rowBefore);
      expect(await count(t, 'SELECT 1 FROM audit_log', [])).toBe(auditBefore);
    });

    it('refuses customers (403 FORBIDDEN) and API keys, an administrator’s too (403 API_KEY_SCOPE)', async () => {
      const [owner, other] = [await aCustomer(t), await aCustomer(t)];
      const { deviceId } = (await aClaimedDevice(t, owner)).body;
      const { data: key } = await t.api.POST('/api/v1/user/api-keys', { body: { name: 'admin script', scope: 'write' }, headers: admin.headers });

      expectProblem(await transfer(t, owner.headers, deviceId, other.email), 403, 'FORBIDDEN');
      expectProblem(await transfer(t, bearer(key!.key), deviceId, other.email), 403, 'API_KEY_SCOPE');
      expectProblem(await decommission(t, owner.headers, deviceId), 403, 'FORBIDDEN');
      expectProblem(await decommission(t, bearer(key!.key), deviceId), 403, 'API_KEY_SCOPE');
      expectProblem(await reopen(t, owner.headers, deviceId), 403, 'FORBIDDEN');
      expectProblem(await transfer(t, {} as Headers, deviceId, other.email), 401, 'UNAUTHORIZED');

      expect((await ownedDeviceRow(t.db, deviceId))?.owner_id).toBe(owner.userId);
      expect(await auditOf(t, deviceId, 'device.decommissioned')).toBe(0);
    });
  });

  describe('POST /api/v1/admin/devices/{deviceId}/decommission and /reopen', () => {
    it('voids every credential at once and refuses registration until re-opened; re-opening lets the gateway register again', async () => {
      const owner = await aCustomer(t);
      const device = await aClaimedDevice(t, owner);
      const { deviceId, hardwareId } = device.body;
      const { registered } = device;
      expect((await getMe(t.api, registered.accessToken)).response.status).toBe(200);

      const done = await decommission(t, admin.headers, deviceId);

      expect(done.response.status).toBe(200);
      expect(done.data).toEqual({ deviceId, decommissionedAt: expect.any(String) });
      expectProblem(await getMe(t.api, registered.accessToken), 401, 'UNAUTHORIZED');
      expectProblem(await refresh(t.api, registered.refreshToken), 401);
      expectProblem(await login(t.api, deviceId, registered.deviceSecret), 401, 'INVALID_CREDENTIALS');
      const refused = expectProblem(await t.api.POST('/api/v1/device/register', { body: aRegistration({ deviceId, hardwareId }) }), 409, 'DEVICE_DECOMMISSIONED');
      expect(refused.detail).toMatch(/administrator re-opens it/);
      expectProblem(await dashboardDevice(t, owner.headers, deviceId), 404, 'NOT_FOUND');
      expectProblem(await claim(t, owner, { deviceId, claimCode: device.body.claimCode }), 401, 'INVALID_CLAIM');
      const row = await ownedDeviceRow(t.db, deviceId);
      expect(row).toMatchObject({ owner_id: null, claimed_at: null, decommissioned_at: new Date(done.data!.decommissionedAt) });
      const { rows: live } = await t.db.query('SELECT 1 FROM device_refresh_tokens WHERE device_id = $1 AND revoked_at IS NULL', [deviceId]);
      expect(live).toEqual([]);
      expect((await eventsOf(t, deviceId)).rows.at(-1)).toEqual({ type: 'device.decommissioned', owner_id: owner.userId });

      // Twice: the same answer, nothing recorded again.
      const again = await decommission(t, admin.headers, deviceId);
      expect(again.data).toEqual(done.data);
      expect(await auditOf(t, deviceId, 'device.decommissioned')).toBe(1);

      const reopened = await reopen(t, admin.headers, deviceId);
      expect(reopened.response.status).toBe(200);
      expect(reopened.data).toEqual({ deviceId, openUntil: expect.any(String) });
      expect(new Date(reopened.data!.openUntil!).getTime()).toBeGreaterThan(Date.now());

      const body = aRegistration({ deviceId, hardwareId });
      const back = await t.api.POST('/api/v1/device/register', { body });
      expect(back.response.status).toBe(201);
      expect((await getMe(t.api, back.data!.accessToken)).response.status).toBe(200);
      expect((await login(t.api, deviceId, back.data!.deviceSecret)).response.status).toBe(200);
      const newOwner = await aCustomer(t);
      expect((await claim(t, newOwner, { deviceId, claimCode: body.claimCode })).response.status).toBe(200);
      expect(await auditOf(t, deviceId, 'device.reopened')).toBe(1);
    });

    it('re-opening a device that is not decommissioned changes nothing; unknown devices are 404 and change nothing', async () => {
      const { deviceId } = (await aRegisteredDevice(t)).body;
      const rowBefore = await ownedDeviceRow(t.db, deviceId);

      expect((await reopen(t, admin.headers, deviceId)).data).toEqual({ deviceId, openUntil: null });
      expectProblem(await decommission(t, admin.headers, 'gw-no-such-device'), 404, 'NOT_FOUND');
      expectProblem(await reopen(t, admin.headers, 'gw-no-such-device'), 404, 'NOT_FOUND');
      expectProblem(await decommission(t, admin.headers, 'bad id!'), 400, 'VALIDATION_FAILED');

      expect(await ownedDeviceRow(t.db, deviceId)).toEqual(rowBefore);
      expect(await count(t, "SELECT 1 FROM audit_log WHERE action IN ('device.reopened', 'device.decommissioned') AND device_id = $1", [deviceId])).toBe(0);
    });

    it('a decommissioned device cannot be transferred until re-opened (409)', async () => {
      const owner = await aCustomer(t);
      const { deviceId } = (await aRegisteredDevice(t)).body;
      await decommission(t, admin.headers, deviceId);

      expectProblem(await transfer(t, admin.headers, deviceId, owner.email), 409, 'DEVICE_DECOMMISSIONED');
      expect((await ownedDeviceRow(t.db, deviceId))?.owner_id).toBeNull();
    });
  });

  it('a decommission on one instance is refused by another instance’s device guard, whose snapshot had the device', async () => {
    const { a, b, close } = await startTwoInstances(ADMIN_SETTINGS);
    try {
      const device = await aRegisteredDevice(a);
      const { accessToken } = device.registered;
      // Instance b reads the device once, so its snapshot cache holds it.
      expect((await getMe(b.api, accessToken)).response.status).toBe(200);
      expect((await a.api.GET('/api/v1/device/config', { headers: bearer(accessToken) })).response.status).toBe(200);

      expect((await decommission(a, (await anAdmin(a)).headers, device.body.deviceId)).response.status).toBe(200);

      await eventually(async () => expect((await b.api.GET('/api/v1/device/config', { headers: bearer(accessToken) })).response.status).toBe(401), 2_000);
      expectProblem(await getMe(b.api, accessToken), 401, 'UNAUTHORIZED');
      expectProblem(await getMe(a.api, accessToken), 401, 'UNAUTHORIZED');
    } finally {
      await close();
    }
  });
});
