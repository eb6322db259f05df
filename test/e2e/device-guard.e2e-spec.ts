import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { aDeviceId, aRegistration, bearer, getMe, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { INVALID_TOKEN_CHALLENGE, NO_TOKEN_CHALLENGE } from '../support/challenges.js';
import { base64url, craftAccessToken, type TokenSpec } from '../support/crafted-tokens.js';
import { deviceRow, snapshot } from '../support/database-state.js';
import { expectProblem } from '../support/problems.js';


describe('device access tokens on GET /api/v1/device/me', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  /** A device access token made here: every claim right unless the spec changes it. */
  function craftToken(deviceId: string, spec: TokenSpec = {}): string {
    return craftAccessToken({ sub: deviceId, aud: 'device-cloud:device' }, t.secrets.deviceJwtSecret, spec);
  }

  /**
   * The call is refused with a 401 problem whose challenge says the token sent was refused (or,
   * when none was sent, only names the scheme), and leaves the device untouched (credentials not
   * marked used).
   */
  async function expectRejected(deviceId: string, headers: Record<string, string>, challenge = INVALID_TOKEN_CHALLENGE): Promise<void> {
    const before = await snapshot(t.db, deviceId);

    const result = await t.api.GET('/api/v1/device/me', { headers });

    expectProblem(result, 401, 'UNAUTHORIZED');
    expect(result.response.headers.get('www-authenticate')).toBe(challenge);
    expect(await snapshot(t.db, deviceId)).toEqual(before);
  }

  describe('a valid token', () => {
    it('answers 200 with the device as the service knows it', async () => {
      const body = aRegistration({ firmwareVersion: '0.1.10' });
      const device = await registerDevice(t.api, body);

      const { data, response } = await getMe(t.api, device.accessToken);

      expect(response.status).toBe(200);
      const row = (await deviceRow(t.db, body.deviceId))!;
      expect(data).toEqual({
        deviceId: body.deviceId,
        hardwareId: body.hardwareId,
        firmwareVersion: '0.1.10',
        registeredAt: row.registered_at.toISOString(),
        claimed: false,
      });
      expect(data!.registeredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    });

    it('marks the credentials as used', async () => {
      const device = await registerDevice(t.api);

      await getMe(t.api, device.accessToken);

      expect((await deviceRow(t.db, device.deviceId))!.credentials_used_at).toBeInstanceOf(Date);
    });

    it('accepts a token signed with the device key and every claim right', async () => {
      const device = await registerDevice(t.api);

      const { data, response } = await getMe(t.api, craftToken(device.deviceId));

      expect(response.status).toBe(200);
      expect(data?.deviceId).toBe(device.deviceId);
    });
  });

  describe('401 problem, device unchanged, for', () => {
    let deviceId: string;
    let accessToken: string;

    beforeEach(async () => {
      ({ deviceId, accessToken } = await registerDevice(t.api));
    });

    it('no Authorization header (challenge without error)', async () => {
      await expectRejected(deviceId, {}, NO_TOKEN_CHALLENGE);
    });

    it.each([
      ['Bearer garbage', () => 'Bearer garbage', INVALID_TOKEN_CHALLENGE],
      ['an empty bearer token (challenge without error)', () => 'Bearer ', NO_TOKEN_CHALLENGE],
      ['the token without the Bearer scheme (challenge without error)', () => accessToken, NO_TOKEN_CHALLENGE],
      ['the token under the Basic scheme (challenge without error)', () => `Basic ${accessToken}`, NO_TOKEN_CHALLENGE],
    ])('%s', async (_name, authorization, challenge) => {
      await expectRejected(deviceId, { authorization: authorization() }, challenge);
    });

    it('a payload with one character changed', async () => {
      const [header, payload, signature] = accessToken.split('.');
      const i = Math.floor(payload.length / 2);
      const tampered = payload.slice(0, i) + (payload[i] === 'A' ? 'B' : 'A') + payload.slice(i + 1);

      await expectRejected(deviceId, bearer(`${header}.${tampered}.${signature}`));
    });

    it('a payload rewritten for another device under the original signature', async () => {
      const other = await registerDevice(t.api);
      const [header, payload, signature] = other.accessToken.split('.');
      const rewritten = base64url({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: deviceId });

      await expectRejected(deviceId, bearer(`${header}.${rewritten}.${signature}`));
    });

    it('a token signed with another key', async () => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { secret: randomBytes(32).toString('base64url') })));
    });

    it('an unsigned token (alg none)', async () => {
      const [, payload] = craftToken(deviceId).split('.');

      await expectRejected(deviceId, bearer(`${base64url({ alg: 'none', typ: 'at+jwt' })}.${payload}.`));
    });

    it('a token signed with the device key under another algorithm (HS512)', async () => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { algorithm: 'HS512' })));
    });

    it('an expired token', async () => {
      const now = Math.floor(Date.now() / 1000);

      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { iat: now - 600, exp: now - 60 } })));
    });

    it('another audience', async () => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { aud: 'device-cloud:customer' } })));
    });

    it('another issuer', async () => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { iss: 'someone-else' } })));
    });

    it('another token type in the header (typ JWT)', async () => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { header: { typ: 'JWT' } })));
    });

    it('a token without the token version claim', async () => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { tv: undefined } })));
    });

    it('a token without exp (RFC 8725: every access token expires)', async () => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { exp: undefined } })));
    });

    it('a token without iat', async () => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { iat: undefined } })));
    });

    it.each([
      ['exp', { exp: String(Math.floor(Date.now() / 1000) + 300) }],
      ['iat', { iat: String(Math.floor(Date.now() / 1000)) }],
    ])('a token whose %s is not a number', async (_claim, payload) => {
      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload })));
    });

    it('a token issued a minute in the future (one issued 2 seconds ahead is still accepted)', async () => {
      const now = Math.floor(Date.now() / 1000);
      expect((await getMe(t.api, craftToken(deviceId, { payload: { iat: now + 2, exp: now + 302 } }))).response.status).toBe(200);

      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { iat: now + 60, exp: now + 360 } })));
    });

    it('a token naming an unknown device', async () => {
      await expectRejected(deviceId, bearer(craftToken(aDeviceId())));
    });

    it('a token issued before a registration retry replaced the credentials (token version mismatch)', async () => {
      const body = aRegistration();
      const first = await registerDevice(t.api, body);
      const retry = await registerDevice(t.api, body);

      await expectRejected(body.deviceId, bearer(first.accessToken));

      expect((await getMe(t.api, retry.accessToken)).response.status).toBe(200);
    });

    it('a token signed with RS256 (asymmetric algorithm where the service pins HS256)', async () => {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const token = craftToken(deviceId, { algorithm: 'RS256', secret: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string });

      await expectRejected(deviceId, bearer(token));
    });

    it('a token that is not valid yet (nbf a minute ahead)', async () => {
      const now = Math.floor(Date.now() / 1000);

      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { nbf: now + 60 } })));
    });

    it('a token expired beyond the 5-second leeway (one expired 2 seconds ago is still accepted)', async () => {
      const now = Math.floor(Date.now() / 1000);
      expect((await getMe(t.api, craftToken(deviceId, { payload: { iat: now - 600, exp: now - 2 } }))).response.status).toBe(200);

      await expectRejected(deviceId, bearer(craftToken(deviceId, { payload: { iat: now - 600, exp: now - 30 } })));
    });

    it('a refresh token presented as an access token', async () => {
      const registered = await registerDevice(t.api);

      await expectRejected(registered.deviceId, bearer(registered.refreshToken));
    });

    it('an access token presented to the refresh endpoint', async () => {
      const registered = await registerDevice(t.api);

      expectProblem(await t.api.POST('/api/v1/device/token/refresh', { body: { refreshToken: registered.accessToken } }), 401, 'INVALID_TOKEN');
    });

    it('a token of a deleted device (deleted behind the service\'s back: seen once the change notification arrives)', async () => {
      await t.db.query('DELETE FROM devices WHERE device_id = $1', [deviceId]);

      let status = 0;
      for (const deadline = Date.now() + 2000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
        status = (await getMe(t.api, accessToken)).response.status;
        if (status === 401) break;
      }
      expect(status).toBe(401);
      expectProblem(await getMe(t.api, accessToken), 401, 'UNAUTHORIZED');
    });
  });
});
