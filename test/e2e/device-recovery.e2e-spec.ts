import * as argon2 from 'argon2';
import { aClaimCode, aDeviceId, bearer, getMe, login, refresh, type RegisterBody, type Registered } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, aRegisteredDevice, auditRows, claim, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { snapshot } from '../support/database-state.js';
import { expectProblem, fieldsOf } from '../support/problems.js';

const DAY_MS = 24 * 3600 * 1000;
/** Failure limits high enough that the refused registrations and claims below never turn into 429s. */
const SETTINGS = {
  ...ADMIN_SETTINGS,
  LOGIN_MAX_FAILURES_PER_DEVICE: '1000',
  LOGIN_MAX_FAILURES_PER_ADDRESS: '100000',
  CLAIM_MAX_FAILURES_PER_DEVICE: '1000',
  CLAIM_MAX_FAILURES_PER_CUSTOMER: '1000',
};

describe('device recovery: re-registration of a factory-reset gateway', () => {
  let t: TestApp;
  let owner: SignedIn;
  let other: SignedIn;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp(SETTINGS);
    [owner, other, admin] = await Promise.all([aCustomer(t), aCustomer(t), anAdmin(t)]);
  });
  afterAll(async () => {
    await t.close();
  });

  const openWindow = (who: { headers: { authorization: string } } | undefined, deviceId: string) =>
    t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', { params: { path: { deviceId } }, headers: who?.headers });
  const register = (body: RegisterBody) => t.api.POST('/api/v1/device/register', { body });

  /**
   * A gateway in service: claimed by `owner`, its credentials used (it logged in), registered a day
   * ago, so neither a lost-response retry nor anything but an open window lets it register again.
   */
  async function aDeviceInService(): Promise<{ body: RegisterBody; registered: Registered }> {
    const device = await aClaimedDevice(t, owner);
    expect((await login(t.api, device.body.deviceId, device.registered.deviceSecret)).response.status).toBe(200);
    await t.db.query(`UPDATE devices SET registered_at = registered_at - interval '1 day', credentials_issued_at = credentials_issued_at - interval '1 day' WHERE device_id = $1`, [
      device.body.deviceId,
    ]);
    return device;
  }

  describe('POST /api/v1/user/devices/:deviceId/re-registration', () => {
    it('by the owner: 200 { deviceId, openUntil } about 24 hours ahead, stored on the device and audited', async () => {
      const { body } = await aDeviceInService();
      const before = Date.now();

      const { data, response } = await openWindow(owner, body.deviceId);

      expect(response.status).toBe(200);
      expect(data).toEqual({ deviceId: body.deviceId, openUntil: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });
      const openUntil = new Date(data!.openUntil).getTime();
      expect(openUntil).toBeGreaterThanOrEqual(before + DAY_MS - 1000);
      expect(openUntil).toBeLessThanOrEqual(Date.now() + DAY_MS + 1000);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.re_registration_until!.toISOString()).toBe(data!.openUntil);
      expect((await auditRows(t.db, body.deviceId)).at(-1)).toEqual(
        expect.objectContaining({ user_id: owner.userId, action: 're-registration', client_address: '127.0.0.1' }),
      );
    });

    it('opening does not touch ownership or credentials', async () => {
      const { body, registered } = await aDeviceInService();
      const before = await snapshot(t.db, body.deviceId);

      await openWindow(owner, body.deviceId);

      const after = await snapshot(t.db, body.deviceId);
      expect(after.refreshTokens).toEqual(before.refreshTokens);
      expect({ ...after.device, re_registration_until: null }).toEqual(before.device);
      expect((await login(t.api, body.deviceId, registered.deviceSecret)).response.status).toBe(200);
    });

    it('by another customer: 404 NOT_FOUND, no window opens', async () => {
      const { body } = await aDeviceInService();

      expectProblem(await openWindow(other, body.deviceId), 404, 'NOT_FOUND');

      expect((await ownedDeviceRow(t.db, body.deviceId))!.re_registration_until).toBeNull();
      expect((await auditRows(t.db, body.deviceId)).at(-1)).toEqual(
        expect.objectContaining({ user_id: other.userId, action: 're-registration', outcome: 'NOT_FOUND', client_address: '127.0.0.1' }),
      );
    });

    it('by a customer on an unclaimed device: 404 NOT_FOUND', async () => {
      const { body } = await aRegisteredDevice(t);

      expectProblem(await openWindow(owner, body.deviceId), 404, 'NOT_FOUND');
      expect((await ownedDeviceRow(t.db, body.deviceId))!.re_registration_until).toBeNull();
    });

    it('of an unknown device: 404 NOT_FOUND, also for an admin', async () => {
      expectProblem(await openWindow(owner, aDeviceId()), 404, 'NOT_FOUND');
      expectProblem(await openWindow(admin, aDeviceId()), 404, 'NOT_FOUND');
    });

    it('by an admin who does not own the device: 200', async () => {
      const { body } = await aDeviceInService();

      const { data, response } = await openWindow(admin, body.deviceId);

      expect(response.status).toBe(200);
      expect(data!.deviceId).toBe(body.deviceId);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.re_registration_until!.toISOString()).toBe(data!.openUntil);
      expect((await auditRows(t.db, body.deviceId)).at(-1)).toEqual(expect.objectContaining({ user_id: admin.userId, action: 're-registration' }));
    });

    it.each([
      ['with a space', 'a b'],
      ['of 65 characters', 'd'.repeat(65)],
    ])('a deviceId %s in the path: 400 VALIDATION_FAILED', async (_name, deviceId) => {
      expect(fieldsOf(expectProblem(await openWindow(owner, deviceId), 400, 'VALIDATION_FAILED'))).toEqual(['deviceId']);
    });

    it("without a token, or with the device's own token: 401", async () => {
      const { body, registered } = await aDeviceInService();

      expectProblem(await openWindow(undefined, body.deviceId), 401, 'UNAUTHORIZED');
      expectProblem(await openWindow({ headers: bearer(registered.accessToken) }, body.deviceId), 401, 'UNAUTHORIZED');
      expect((await ownedDeviceRow(t.db, body.deviceId))!.re_registration_until).toBeNull();
    });
  });

  describe('POST /api/v1/device/register inside the window', () => {
    it('with the same deviceId and hardwareId and a new claim code: 201, every old credential void, ownership kept', async () => {
      const { body, registered: old } = await aDeviceInService();
      const oldRefreshToken = (await login(t.api, body.deviceId, old.deviceSecret)).data!.refreshToken;
      const before = (await ownedDeviceRow(t.db, body.deviceId))!;
      expect((await openWindow(owner, body.deviceId)).response.status).toBe(200);
      const newClaimCode = aClaimCode();

      const { data: fresh, response } = await register({ ...body, claimCode: newClaimCode });

      expect(response.status).toBe(201);
      expect(fresh).toEqual(expect.objectContaining({ deviceId: body.deviceId, deviceSecret: expect.any(String), accessToken: expect.any(String) }));
      expect(fresh!.deviceSecret).not.toBe(old.deviceSecret);
      // The new credentials work ...
      expect((await getMe(t.api, fresh!.accessToken)).response.status).toBe(200);
      expect((await login(t.api, body.deviceId, fresh!.deviceSecret)).response.status).toBe(200);
      expect((await refresh(t.api, fresh!.refreshToken)).response.status).toBe(200);
      // ... and none of the old ones.
      expectProblem(await login(t.api, body.deviceId, old.deviceSecret), 401, 'INVALID_CREDENTIALS');
      expectProblem(await getMe(t.api, old.accessToken), 401);
      expectProblem(await refresh(t.api, old.refreshToken), 401, 'INVALID_TOKEN');
      expectProblem(await refresh(t.api, oldRefreshToken), 401, 'INVALID_TOKEN');
      // Ownership stays, the claim code is replaced, the window is closed.
      const after = (await ownedDeviceRow(t.db, body.deviceId))!;
      expect(after).toEqual(
        expect.objectContaining({
          owner_id: owner.userId,
          claimed_at: before.claimed_at,
          visible_since: before.visible_since,
          hardware_id: before.hardware_id,
          registered_at: before.registered_at,
          re_registration_until: null,
        }),
      );
      expect(after.token_version).toBeGreaterThan(before.token_version);
      expect(after.claim_code_hash).not.toBe(before.claim_code_hash);
      await expect(argon2.verify(after.claim_code_hash!, newClaimCode)).resolves.toBe(true);
      await expect(argon2.verify(after.claim_code_hash!, body.claimCode!)).resolves.toBe(false);
      const { data: listed } = await t.api.GET('/api/v1/user/devices', { headers: owner.headers });
      expect(listed!.items.map((item) => item.deviceId)).toContain(body.deviceId);
    });

    it('after a release, the new claim code claims the device and the old one does not', async () => {
      const { body } = await aDeviceInService();
      await openWindow(owner, body.deviceId);
      const newClaimCode = aClaimCode();
      expect((await register({ ...body, claimCode: newClaimCode })).response.status).toBe(201);
      expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: body.deviceId } }, headers: owner.headers })).response.status).toBe(
        204,
      );

      expectProblem(await claim(t, other, { deviceId: body.deviceId, claimCode: body.claimCode }), 401, 'INVALID_CLAIM');
      const { response } = await claim(t, other, { deviceId: body.deviceId, claimCode: newClaimCode });

      expect(response.status).toBe(200);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(other.userId);
    });

    it('also when an admin opened the window', async () => {
      const { body } = await aDeviceInService();
      expect((await openWindow(admin, body.deviceId)).response.status).toBe(200);

      const { response } = await register({ ...body, claimCode: aClaimCode() });

      expect(response.status).toBe(201);
      expect((await ownedDeviceRow(t.db, body.deviceId))!.owner_id).toBe(owner.userId);
    });

    it('the window closes after one use: a second registration is 409 and changes nothing', async () => {
      const { body } = await aDeviceInService();
      await openWindow(owner, body.deviceId);
      const reRegistration = { ...body, claimCode: aClaimCode() };
      const { data: fresh } = await register(reRegistration);
      expect(fresh).toBeDefined();
      const before = await snapshot(t.db, body.deviceId);

      expectProblem(await register({ ...body, claimCode: aClaimCode() }), 409, 'DEVICE_ALREADY_REGISTERED');
      expectProblem(await register(reRegistration), 409, 'DEVICE_ALREADY_REGISTERED');

      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
      expect((await login(t.api, body.deviceId, fresh!.deviceSecret)).response.status).toBe(200);
    });

    it('with a different hardwareId: 409, nothing changes, the old credentials keep working', async () => {
      const { body, registered } = await aDeviceInService();
      await openWindow(owner, body.deviceId);
      const before = await snapshot(t.db, body.deviceId);

      expectProblem(await register({ ...body, hardwareId: 'hw-someone-else', claimCode: aClaimCode() }), 409, 'DEVICE_ALREADY_REGISTERED');

      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
      expect((await login(t.api, body.deviceId, registered.deviceSecret)).response.status).toBe(200);
    });
  });

  describe('POST /api/v1/device/register without an open window: 409, nothing changes', () => {
    it('after the window ended', async () => {
      const { body, registered } = await aDeviceInService();
      await openWindow(owner, body.deviceId);
      await t.db.query(`UPDATE devices SET re_registration_until = now() - interval '1 second' WHERE device_id = $1`, [body.deviceId]);
      const before = await snapshot(t.db, body.deviceId);

      expectProblem(await register({ ...body, claimCode: aClaimCode() }), 409, 'DEVICE_ALREADY_REGISTERED');

      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
      expect((await login(t.api, body.deviceId, registered.deviceSecret)).response.status).toBe(200);
    });

    it('when no window was ever opened', async () => {
      const { body, registered } = await aDeviceInService();
      const before = await snapshot(t.db, body.deviceId);

      expectProblem(await register({ ...body, claimCode: aClaimCode() }), 409, 'DEVICE_ALREADY_REGISTERED');

      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
      expect((await login(t.api, body.deviceId, registered.deviceSecret)).response.status).toBe(200);
    });

    it('after the owner released the device (a release closes the window)', async () => {
      const { body } = await aDeviceInService();
      await openWindow(owner, body.deviceId);
      expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: body.deviceId } }, headers: owner.headers })).response.status).toBe(
        204,
      );
      const before = await snapshot(t.db, body.deviceId);

      expectProblem(await register({ ...body, claimCode: aClaimCode() }), 409, 'DEVICE_ALREADY_REGISTERED');

      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
    });
  });
});

describe('device recovery with RE_REGISTRATION_WINDOW_SEC=120', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ ...SETTINGS, RE_REGISTRATION_WINDOW_SEC: '120' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('the window is open for 120 seconds', async () => {
    const owner = await aCustomer(t);
    const { body } = await aClaimedDevice(t, owner);
    const before = Date.now();

    const { data, response } = await t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', {
      params: { path: { deviceId: body.deviceId } },
      headers: owner.headers,
    });

    expect(response.status).toBe(200);
    const openUntil = new Date(data!.openUntil).getTime();
    expect(openUntil).toBeGreaterThanOrEqual(before + 120_000 - 1000);
    expect(openUntil).toBeLessThanOrEqual(Date.now() + 120_000 + 1000);
    expect((await ownedDeviceRow(t.db, body.deviceId))!.re_registration_until!.getTime()).toBe(openUntil);
  });
});
