import { createHmac } from 'node:crypto';
import * as argon2 from 'argon2';
import jwt, { type JwtPayload } from 'jsonwebtoken';
import { aDeviceId, aLegacyRegistration, aRegistration, getMe, login, refresh, registerDevice, type RegisterBody } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { deviceRow, refreshTokenRows, snapshot, tableCounts } from '../support/database-state.js';
import { expectProblem, fieldsOf } from '../support/problems.js';

const ACCESS_TOKEN_TTL_SEC = 900;
/** Failure limits high enough that the many refused retries below never turn into 429s. */
const SETTINGS = {
  DEVICE_ACCESS_TOKEN_TTL_SEC: String(ACCESS_TOKEN_TTL_SEC),
  REGISTRATION_RETRY_WINDOW_SEC: '600',
  LOGIN_MAX_FAILURES_PER_DEVICE: '1000',
  LOGIN_MAX_FAILURES_PER_ADDRESS: '100000',
};

describe('POST /api/v1/device/register', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(SETTINGS);
  });
  afterAll(async () => {
    await t.close();
  });

  const register = (body: RegisterBody) => t.api.POST('/api/v1/device/register', { body });
  const hmac = (value: string) => createHmac('sha256', t.secrets.pepper).update(value, 'utf8').digest('hex');

  describe('a new device', () => {
    it('answers 201 with its secret, a token pair and the initial configuration', async () => {
      const body = aRegistration();

      const { data, response } = await register(body);

      expect(response.status).toBe(201);
      expect(data).toEqual({
        deviceId: body.deviceId,
        deviceSecret: expect.stringMatching(/^[A-Za-z0-9_-]{43,}$/),
        accessToken: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
        refreshToken: expect.any(String),
        tokenType: 'Bearer',
        expiresIn: ACCESS_TOKEN_TTL_SEC,
        config: {
          version: expect.any(Number),
          telemetryIntervalSec: expect.any(Number),
          uploadBatchSize: expect.any(Number),
          otaCheckIntervalSec: expect.any(Number),
          otaMinSoc: expect.any(Number),
          otaTemperatureRange: { min: expect.any(Number), max: expect.any(Number) },
          otaChannel: expect.stringMatching(/^(stable|beta)$/),
          logLevel: expect.stringMatching(/^(error|warn|info|debug)$/),
          logUpload: expect.stringMatching(/^(off|errors|all)$/),
          updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
        },
      });
      const { telemetryIntervalSec, uploadBatchSize, otaCheckIntervalSec } = data!.config;
      expect(Math.min(telemetryIntervalSec, uploadBatchSize, otaCheckIntervalSec)).toBeGreaterThan(0);
    });

    it('issues an HS256 device access token for the device that expires after the configured TTL', async () => {
      const registered = await registerDevice(t.api);

      const token = jwt.decode(registered.accessToken, { complete: true });

      expect(token?.header).toEqual(expect.objectContaining({ alg: 'HS256', typ: 'at+jwt' }));
      const payload = token?.payload as JwtPayload;
      expect(payload).toEqual(expect.objectContaining({ sub: registered.deviceId, aud: 'device-cloud:device', iss: 'device-cloud', tv: 1 }));
      expect(payload.exp! - payload.iat!).toBe(ACCESS_TOKEN_TTL_SEC);
    });

    it('stores the device unclaimed, with token version 1 and credentials not yet used', async () => {
      const body = aRegistration({ firmwareVersion: '0.1.10' });
      const before = Date.now();

      await registerDevice(t.api, body);

      const row = await deviceRow(t.db, body.deviceId);
      expect(row).toEqual(
        expect.objectContaining({
          device_id: body.deviceId,
          hardware_id: body.hardwareId,
          firmware_version: '0.1.10',
          token_version: 1,
          credentials_used_at: null,
          last_seen_at: null,
          owner_id: null,
          claimed_at: null,
        }),
      );
      expect(row!.registered_at.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(row!.registered_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    });

    it('stores the device secret only as its HMAC-SHA-256', async () => {
      const registered = await registerDevice(t.api);

      const row = await deviceRow(t.db, registered.deviceId);

      expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row!.secret_hash).not.toBe(registered.deviceSecret);
      expect(row!.secret_hash).toBe(hmac(registered.deviceSecret));
      expect(JSON.stringify(row)).not.toContain(registered.deviceSecret);
    });

    it('gives every device its own random secret', async () => {
      const [first, second] = await Promise.all([registerDevice(t.api), registerDevice(t.api)]);

      expect(first.deviceSecret).not.toBe(second.deviceSecret);
      expect(first.refreshToken).not.toBe(second.refreshToken);
    });

    it('stores only an argon2id hash of the claim code', async () => {
      const body = aRegistration();

      await registerDevice(t.api, body);

      const hash = (await deviceRow(t.db, body.deviceId))!.claim_code_hash!;
      expect(hash.startsWith('$argon2id$')).toBe(true);
      expect(hash).not.toContain(body.claimCode!);
      expect(hash).not.toContain(body.claimCode!.replaceAll('-', ''));
      await expect(argon2.verify(hash, body.claimCode!)).resolves.toBe(true);
    });

    it('accepts a lower-case claim code and hashes its upper-case form', async () => {
      const claimCode = 'quick-amber-falcon';
      const body = aRegistration({ claimCode });

      await registerDevice(t.api, body);

      const hash = (await deviceRow(t.db, body.deviceId))!.claim_code_hash!;
      await expect(argon2.verify(hash, 'QUICK-AMBER-FALCON')).resolves.toBe(true);
      await expect(argon2.verify(hash, claimCode)).resolves.toBe(false);
    });

    it('stores the refresh token only as a hash, bound to the token version', async () => {
      const registered = await registerDevice(t.api);

      const tokens = await refreshTokenRows(t.db, registered.deviceId);

      expect(tokens).toHaveLength(1);
      expect(tokens[0]).toEqual(expect.objectContaining({ token_version: 1, rotated_at: null, revoked_at: null }));
      expect(tokens[0].token_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(tokens[0].token_hash).not.toBe(registered.refreshToken);
      expect(tokens[0].expires_at.getTime()).toBeGreaterThan(Date.now());
    });

    it('returns credentials that work: the secret logs in, the tokens authenticate and refresh', async () => {
      const registered = await registerDevice(t.api);

      expect((await getMe(t.api, registered.accessToken)).response.status).toBe(200);
      expect((await refresh(t.api, registered.refreshToken)).response.status).toBe(200);
      expect((await login(t.api, registered.deviceId, registered.deviceSecret)).response.status).toBe(200);
    });

    it('accepts the longest ids and every allowed deviceId character', async () => {
      const deviceId = `${aDeviceId('A.b_C:d-9')}`.padEnd(64, 'z');
      const body = aRegistration({ deviceId, hardwareId: 'h'.repeat(128), firmwareVersion: '0.1.4.0' });

      const { response } = await register(body);

      expect(response.status).toBe(201);
      expect(await deviceRow(t.db, deviceId)).toEqual(expect.objectContaining({ hardware_id: 'h'.repeat(128), firmware_version: '0.1.4.0' }));
    });
  });

  describe('claim code by firmware version', () => {
    it.each(['0.1.4', '0.1.10', '1.0.0', '0.2', '0.1.4.1'])('firmware %s must send a claim code: 400 CLAIM_CODE_REQUIRED, nothing stored', async (firmwareVersion) => {
      const body = aLegacyRegistration({ firmwareVersion });
      const before = await tableCounts(t.db);

      const problem = expectProblem(await register(body), 400, 'CLAIM_CODE_REQUIRED');

      expect(fieldsOf(problem)).toContain('claimCode');
      expect(await deviceRow(t.db, body.deviceId)).toBeUndefined();
      expect(await tableCounts(t.db)).toEqual(before);
    });

    it.each(['0.1.3', '0.0.9', '0.1'])('firmware %s registers without a claim code as a legacy device', async (firmwareVersion) => {
      const body = aLegacyRegistration({ firmwareVersion });

      const { response } = await register(body);

      expect(response.status).toBe(201);
      expect(await deviceRow(t.db, body.deviceId)).toEqual(expect.objectContaining({ firmware_version: firmwareVersion, claim_code_hash: null }));
    });
  });

  describe('retry after a lost response', () => {
    it('answers 201 with fresh credentials and voids every earlier one', async () => {
      const body = aRegistration();
      const first = await registerDevice(t.api, body);
      const before = (await deviceRow(t.db, body.deviceId))!;

      const { data: retry, response } = await register(body);

      expect(response.status).toBe(201);
      expect(retry!.deviceSecret).not.toBe(first.deviceSecret);
      const after = (await deviceRow(t.db, body.deviceId))!;
      expect(after).toEqual({
        ...before,
        secret_hash: hmac(retry!.deviceSecret),
        token_version: before.token_version + 1,
        credentials_issued_at: expect.any(Date),
        // A registration reports the firmware version at that moment (OTA events from before no longer set it).
        firmware_reported_at: after.credentials_issued_at,
      });
      expect(after.credentials_issued_at.getTime()).toBeGreaterThanOrEqual(before.credentials_issued_at.getTime());
      const [firstToken] = await refreshTokenRows(t.db, body.deviceId);
      expect(firstToken.revoked_at).not.toBeNull();

      expectProblem(await login(t.api, body.deviceId, first.deviceSecret), 401, 'INVALID_CREDENTIALS');
      expectProblem(await getMe(t.api, first.accessToken), 401);
      expectProblem(await refresh(t.api, first.refreshToken), 401, 'INVALID_TOKEN');

      expect((await getMe(t.api, retry!.accessToken)).response.status).toBe(200);
      expect((await refresh(t.api, retry!.refreshToken)).response.status).toBe(200);
      expect((await login(t.api, body.deviceId, retry!.deviceSecret)).response.status).toBe(200);
    });

    it('accepts the claim code in another letter case', async () => {
      const body = aRegistration({ claimCode: 'quick-amber-falcon' });
      await registerDevice(t.api, body);

      const { response } = await register({ ...body, claimCode: 'QUICK-AMBER-FALCON' });

      expect(response.status).toBe(201);
      expect((await deviceRow(t.db, body.deviceId))!.token_version).toBe(2);
    });

    it('works for a legacy device that sends no claim code either time', async () => {
      const body = aLegacyRegistration();
      const first = await registerDevice(t.api, body);

      const { data: retry, response } = await register(body);

      expect(response.status).toBe(201);
      expect((await deviceRow(t.db, body.deviceId))!.claim_code_hash).toBeNull();
      expectProblem(await login(t.api, body.deviceId, first.deviceSecret), 401, 'INVALID_CREDENTIALS');
      expect((await login(t.api, body.deviceId, retry!.deviceSecret)).response.status).toBe(200);
    });

    it('is still accepted nine minutes after the first registration', async () => {
      const body = aRegistration();
      await registerDevice(t.api, body);
      await t.db.query(`UPDATE devices SET registered_at = now() - interval '9 minutes' WHERE device_id = $1`, [body.deviceId]);

      const { response } = await register(body);

      expect(response.status).toBe(201);
    });
  });

  describe('any other registration of a known deviceId: 409, nothing changes', () => {
    async function expectRefused(body: RegisterBody): Promise<void> {
      const before = await snapshot(t.db, body.deviceId);
      expect(before.device).toBeDefined();

      expectProblem(await register(body), 409, 'DEVICE_ALREADY_REGISTERED');

      expect(await snapshot(t.db, body.deviceId)).toEqual(before);
    }

    it('with a different hardwareId, and the first credentials keep working', async () => {
      const body = aRegistration();
      const first = await registerDevice(t.api, body);

      await expectRefused({ ...body, hardwareId: 'hw-someone-else' });

      expect((await login(t.api, body.deviceId, first.deviceSecret)).response.status).toBe(200);
    });

    it('with a different claim code', async () => {
      const body = aRegistration();
      await registerDevice(t.api, body);

      await expectRefused({ ...body, claimCode: 'WRONG-CLAIM-CODE' });
    });

    it('with a claim code when the first registration had none', async () => {
      const body = aLegacyRegistration();
      await registerDevice(t.api, body);

      await expectRefused({ ...body, claimCode: 'ABCD-EFGH' });
    });

    it('without the claim code the first registration had', async () => {
      const body = aRegistration({ firmwareVersion: '0.1.3' });
      await registerDevice(t.api, body);

      const { claimCode: _omitted, ...withoutClaimCode } = body;
      await expectRefused(withoutClaimCode);
    });

    it('more than 10 minutes after the first registration', async () => {
      const body = aRegistration();
      await registerDevice(t.api, body);
      await t.db.query(`UPDATE devices SET registered_at = now() - interval '11 minutes' WHERE device_id = $1`, [body.deviceId]);

      await expectRefused(body);
    });

    it('after the credentials were used to log in', async () => {
      const body = aRegistration();
      const first = await registerDevice(t.api, body);
      expect((await login(t.api, body.deviceId, first.deviceSecret)).response.status).toBe(200);

      await expectRefused(body);
    });

    it('after the access token was used on /device/me', async () => {
      const body = aRegistration();
      const first = await registerDevice(t.api, body);
      expect((await getMe(t.api, first.accessToken)).response.status).toBe(200);

      await expectRefused(body);
    });

    it('after the refresh token was used', async () => {
      const body = aRegistration();
      const first = await registerDevice(t.api, body);
      expect((await refresh(t.api, first.refreshToken)).response.status).toBe(200);

      await expectRefused(body);
    });

    it('after a successful retry had its credentials used', async () => {
      const body = aRegistration();
      await registerDevice(t.api, body);
      const retry = await registerDevice(t.api, body);
      expect((await login(t.api, body.deviceId, retry.deviceSecret)).response.status).toBe(200);

      await expectRefused(body);
    });
  });

  describe('validation: 400 VALIDATION_FAILED naming the field, nothing stored', () => {
    type Mutation = (body: Record<string, unknown>) => Record<string, unknown>;
    const without =
      (field: string): Mutation =>
      (body) => {
        const copy = { ...body };
        delete copy[field];
        return copy;
      };
    const withValue =
      (field: string, value: unknown): Mutation =>
      (body) => ({ ...body, [field]: value });

    const cases: Array<[string, Mutation, string]> = [
      ['missing deviceId', without('deviceId'), 'deviceId'],
      ['missing hardwareId', without('hardwareId'), 'hardwareId'],
      ['missing firmwareVersion', without('firmwareVersion'), 'firmwareVersion'],
      ['deviceId as a number', withValue('deviceId', 42), 'deviceId'],
      ['deviceId null', withValue('deviceId', null), 'deviceId'],
      ['hardwareId as a boolean', withValue('hardwareId', true), 'hardwareId'],
      ['firmwareVersion as a number', withValue('firmwareVersion', 1.2), 'firmwareVersion'],
      ['claimCode as a number', withValue('claimCode', 12345678), 'claimCode'],
      ['empty deviceId', withValue('deviceId', ''), 'deviceId'],
      ['deviceId of 65 characters', withValue('deviceId', 'd'.repeat(65)), 'deviceId'],
      ['deviceId with a space', withValue('deviceId', 'gw 1'), 'deviceId'],
      ['deviceId with a slash', withValue('deviceId', 'gw/1'), 'deviceId'],
      ['empty hardwareId', withValue('hardwareId', ''), 'hardwareId'],
      ['hardwareId of 129 characters', withValue('hardwareId', 'h'.repeat(129)), 'hardwareId'],
      ['firmwareVersion "1"', withValue('firmwareVersion', '1'), 'firmwareVersion'],
      ['firmwareVersion "1.2.3.4.5"', withValue('firmwareVersion', '1.2.3.4.5'), 'firmwareVersion'],
      ['firmwareVersion "v1.2"', withValue('firmwareVersion', 'v1.2'), 'firmwareVersion'],
      ['firmwareVersion "1..2"', withValue('firmwareVersion', '1..2'), 'firmwareVersion'],
      ['empty firmwareVersion', withValue('firmwareVersion', ''), 'firmwareVersion'],
      ['claim code in a single group', withValue('claimCode', 'ABCDEFGH'), 'claimCode'],
      ['claim code of fewer than 8 letters', withValue('claimCode', 'AB-CD'), 'claimCode'],
      ['claim code with a double hyphen', withValue('claimCode', 'ABCD--EFGH'), 'claimCode'],
      ['claim code with a digit', withValue('claimCode', 'ABCD-EFG1'), 'claimCode'],
      ['an unknown property', withValue('ownerId', 'someone'), 'ownerId'],
    ];

    it.each(cases)('%s', async (_name, mutate, field) => {
      const valid = aRegistration();
      const body = mutate({ ...valid });
      const before = await tableCounts(t.db);

      const problem = expectProblem(await register(body as never), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
      expect(problem.errors!.every((error) => typeof error.message === 'string' && error.message.length > 0)).toBe(true);
      expect(await deviceRow(t.db, valid.deviceId)).toBeUndefined();
      expect(await tableCounts(t.db)).toEqual(before);
    });

    it('names every missing field of an empty object', async () => {
      const problem = expectProblem(await register({} as never), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toEqual(expect.arrayContaining(['deviceId', 'hardwareId', 'firmwareVersion']));
    });
  });
});

/**
 * Each burst hits a service that has just started, as after a deployment while the fleet
 * reconnects: its database pool still has to open its connections.
 */
describe('POST /api/v1/device/register: 50 concurrent registrations of one new deviceId', () => {
  const PARALLEL = 50;
  // Each request hashes or verifies the claim code with argon2: a burst of 50 takes a while.
  const BURST_TIMEOUT_MS = 180_000;
  let t: TestApp;

  beforeEach(async () => {
    t = await createTestApp(SETTINGS);
  });
  afterEach(async () => {
    await t.close();
  });

  const register = (body: RegisterBody) => t.api.POST('/api/v1/device/register', { body });

  it('identical requests: one device, only 201 or 409, and exactly one returned secret logs in', async () => {
    const body = aRegistration();

    const results = await Promise.all(Array.from({ length: PARALLEL }, () => register(body)));

    const statuses = results.map((result) => result.response.status);
    expect(statuses.filter((status) => status !== 201 && status !== 409)).toEqual([]);
    const { rows } = await t.db.query('SELECT count(*)::int AS n FROM devices WHERE device_id = $1', [body.deviceId]);
    expect(rows[0].n).toBe(1);
    const secrets = results.flatMap((result) => (result.data ? [result.data.deviceSecret] : []));
    expect(secrets.length).toBeGreaterThan(0);
    const logins = await Promise.all(secrets.map((secret) => login(t.api, body.deviceId, secret)));
    expect(logins.filter((result) => result.response.status === 200)).toHaveLength(1);
    expect(logins.filter((result) => result.response.status === 401)).toHaveLength(secrets.length - 1);
  }, BURST_TIMEOUT_MS);

  it('different hardwareIds: exactly one 201, every other request 409, and the winner owns the row', async () => {
    const deviceId = aDeviceId();
    const bodies = Array.from({ length: PARALLEL }, (_, i) => aRegistration({ deviceId, hardwareId: `hw-${i}` }));

    const results = await Promise.all(bodies.map((body) => register(body)));

    const statuses = results.map((result) => result.response.status);
    const tally = statuses.reduce<Record<number, number>>((counts, status) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {});
    expect(tally).toEqual({ 201: 1, 409: PARALLEL - 1 });
    const winner = statuses.indexOf(201);
    const row = (await deviceRow(t.db, deviceId))!;
    expect(row.hardware_id).toBe(bodies[winner].hardwareId);
    expect(row.token_version).toBe(1);
    expect((await login(t.api, deviceId, results[winner].data!.deviceSecret)).response.status).toBe(200);
  }, BURST_TIMEOUT_MS);
});
