import { createHmac, randomBytes } from 'node:crypto';
import { aDeviceId, getMe, login, refresh, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { deviceRow, refreshTokenRows, snapshot, tableCounts } from '../support/database-state.js';
import { expectProblem, type Problem } from '../support/problems.js';

const LOGIN_FAILURE_WINDOW_SEC = 900;

function withoutCorrelation({ requestId: _requestId, instance: _instance, ...rest }: Problem): Omit<Problem, 'requestId' | 'instance'> {
  return rest;
}

function expectRetryAfter(response: Response): void {
  const retryAfter = response.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThan(0);
  expect(Number(retryAfter)).toBeLessThanOrEqual(LOGIN_FAILURE_WINDOW_SEC);
}

describe('device login and token refresh', () => {
  describe('with limits that never trigger', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await createTestApp({
        DEVICE_ACCESS_TOKEN_TTL_SEC: '600',
        DEVICE_REFRESH_TOKEN_TTL_DAYS: '7',
        LOGIN_MAX_FAILURES_PER_DEVICE: '1000',
        LOGIN_MAX_FAILURES_PER_ADDRESS: '100000',
      });
    });
    afterAll(async () => {
      await t.close();
    });

    const hmac = (value: string) => createHmac('sha256', t.secrets.pepper).update(value, 'utf8').digest('hex');

    describe('POST /api/v1/device/login', () => {
      it('answers 200 with a fresh token pair that authenticates the device', async () => {
        const device = await registerDevice(t.api);

        const { data, response } = await login(t.api, device.deviceId, device.deviceSecret);

        expect(response.status).toBe(200);
        expect(data).toEqual({ accessToken: expect.any(String), refreshToken: expect.any(String), tokenType: 'Bearer', expiresIn: 600 });
        expect(data!.refreshToken).not.toBe(device.refreshToken);
        const me = await getMe(t.api, data!.accessToken);
        expect(me.data?.deviceId).toBe(device.deviceId);
        expect((await refresh(t.api, data!.refreshToken)).response.status).toBe(200);
      });

      it('records the first use of the credentials and stores a new refresh token', async () => {
        const device = await registerDevice(t.api);
        expect((await deviceRow(t.db, device.deviceId))!.credentials_used_at).toBeNull();

        const { data } = await login(t.api, device.deviceId, device.deviceSecret);

        expect((await deviceRow(t.db, device.deviceId))!.credentials_used_at).toBeInstanceOf(Date);
        const tokens = await refreshTokenRows(t.db, device.deviceId);
        expect(tokens).toHaveLength(2);
        expect(tokens.map((token) => token.token_hash)).toContain(hmac(data!.refreshToken));
        expect(tokens.every((token) => token.token_version === 1 && token.revoked_at === null && token.rotated_at === null)).toBe(true);
      });

      it('answers an unknown device and a wrong secret with the same 401 INVALID_CREDENTIALS', async () => {
        const device = await registerDevice(t.api);
        const before = await snapshot(t.db, device.deviceId);

        const unknown = expectProblem(await login(t.api, aDeviceId(), device.deviceSecret), 401, 'INVALID_CREDENTIALS');
        const wrongSecret = expectProblem(await login(t.api, device.deviceId, randomBytes(32).toString('base64url')), 401, 'INVALID_CREDENTIALS');

        expect(withoutCorrelation(wrongSecret)).toEqual(withoutCorrelation(unknown));
        expect(wrongSecret.requestId).not.toBe(unknown.requestId);
        expect(await snapshot(t.db, device.deviceId)).toEqual(before);
      });

      it("refuses another device's secret", async () => {
        const [first, second] = await Promise.all([registerDevice(t.api), registerDevice(t.api)]);

        expectProblem(await login(t.api, first.deviceId, second.deviceSecret), 401, 'INVALID_CREDENTIALS');
      });

      it('refuses a malformed login body with 400 VALIDATION_FAILED', async () => {
        const problem = expectProblem(await t.api.POST('/api/v1/device/login', { body: { deviceId: 'gw/1' } as never }), 400, 'VALIDATION_FAILED');

        expect(problem.errors?.map((error) => error.field)).toEqual(expect.arrayContaining(['deviceId', 'deviceSecret']));
      });
    });

    describe('POST /api/v1/device/token/refresh', () => {
      it('answers 200 with a new token pair and rotates the presented token', async () => {
        const device = await registerDevice(t.api);

        const { data, response } = await refresh(t.api, device.refreshToken);

        expect(response.status).toBe(200);
        expect(data).toEqual({ accessToken: expect.any(String), refreshToken: expect.any(String), tokenType: 'Bearer', expiresIn: 600 });
        expect(data!.refreshToken).not.toBe(device.refreshToken);
        expect((await getMe(t.api, data!.accessToken)).response.status).toBe(200);
        const [used, issued] = await refreshTokenRows(t.db, device.deviceId);
        expect(used).toEqual(expect.objectContaining({ token_hash: hmac(device.refreshToken), rotated_at: expect.any(Date), revoked_at: null }));
        expect(issued).toEqual(expect.objectContaining({ token_hash: hmac(data!.refreshToken), token_version: 1, rotated_at: null, revoked_at: null }));
      });

      it('issues refresh tokens that expire after the configured number of days', async () => {
        const device = await registerDevice(t.api);

        const [token] = await refreshTokenRows(t.db, device.deviceId);

        const lifetimeSec = (token.expires_at.getTime() - token.issued_at.getTime()) / 1000;
        expect(Math.abs(lifetimeSec - 7 * 86_400)).toBeLessThan(60);
      });

      it('stores refresh tokens only as hashes', async () => {
        const device = await registerDevice(t.api);
        const { data } = await refresh(t.api, device.refreshToken);

        const tokens = await refreshTokenRows(t.db, device.deviceId);

        expect(tokens.map((token) => token.token_hash)).toEqual([hmac(device.refreshToken), hmac(data!.refreshToken)]);
        const stored = JSON.stringify(tokens);
        expect(stored).not.toContain(device.refreshToken);
        expect(stored).not.toContain(data!.refreshToken);
      });

      it('refuses an expired refresh token with 401 INVALID_TOKEN and changes nothing', async () => {
        const device = await registerDevice(t.api);
        await t.db.query(`UPDATE device_refresh_tokens SET expires_at = now() - interval '1 second' WHERE device_id = $1`, [device.deviceId]);
        const before = await snapshot(t.db, device.deviceId);

        expectProblem(await refresh(t.api, device.refreshToken), 401, 'INVALID_TOKEN');

        expect(await snapshot(t.db, device.deviceId)).toEqual(before);
      });

      it.each([
        ['garbage', () => 'garbage'],
        ['a well-formed token that was never issued', () => `dcr_${randomBytes(32).toString('base64url')}`],
      ])('refuses %s with 401 INVALID_TOKEN and writes nothing', async (_name, token) => {
        const before = await tableCounts(t.db);

        expectProblem(await refresh(t.api, token()), 401, 'INVALID_TOKEN');

        expect(await tableCounts(t.db)).toEqual(before);
      });

      describe('presenting a refresh token that was already rotated, after the reuse grace', () => {
        /** As if REFRESH_REUSE_GRACE_SEC had passed since the device's rotations (refresh-reuse-grace.e2e-spec.ts waits for real). */
        const pastTheGrace = (deviceId: string) =>
          t.db.query(`UPDATE device_refresh_tokens SET rotated_at = rotated_at - interval '1 hour' WHERE device_id = $1 AND rotated_at IS NOT NULL`, [deviceId]);

        it('answers 401 INVALID_TOKEN: a used refresh token stops working', async () => {
          const device = await registerDevice(t.api);
          expect((await refresh(t.api, device.refreshToken)).response.status).toBe(200);
          await pastTheGrace(device.deviceId);

          expectProblem(await refresh(t.api, device.refreshToken), 401, 'INVALID_TOKEN');
        });

        it('revokes every refresh token of the device, the newest one too', async () => {
          const device = await registerDevice(t.api);
          const rotated = (await refresh(t.api, device.refreshToken)).data!;
          await pastTheGrace(device.deviceId);

          await refresh(t.api, device.refreshToken);

          const tokens = await refreshTokenRows(t.db, device.deviceId);
          expect(tokens).toHaveLength(2);
          expect(tokens.every((token) => token.revoked_at !== null)).toBe(true);
          expectProblem(await refresh(t.api, rotated.refreshToken), 401, 'INVALID_TOKEN');
        });

        it('bumps the token version so access tokens issued before are rejected', async () => {
          const device = await registerDevice(t.api);
          const rotated = (await refresh(t.api, device.refreshToken)).data!;
          const versionBefore = (await deviceRow(t.db, device.deviceId))!.token_version;
          await pastTheGrace(device.deviceId);

          await refresh(t.api, device.refreshToken);

          expect((await deviceRow(t.db, device.deviceId))!.token_version).toBe(versionBefore + 1);
          expectProblem(await getMe(t.api, device.accessToken), 401);
          expectProblem(await getMe(t.api, rotated.accessToken), 401);
        });

        it('leaves the secret valid: the device logs in again and gets working tokens', async () => {
          const device = await registerDevice(t.api);
          await refresh(t.api, device.refreshToken);
          await pastTheGrace(device.deviceId);
          expectProblem(await refresh(t.api, device.refreshToken), 401, 'INVALID_TOKEN');

          const { data, response } = await login(t.api, device.deviceId, device.deviceSecret);

          expect(response.status).toBe(200);
          expect((await getMe(t.api, data!.accessToken)).response.status).toBe(200);
          expect((await refresh(t.api, data!.refreshToken)).response.status).toBe(200);
        });
      });
    });
  });

  describe('no per-device lockout for device secrets (LOGIN_MAX_FAILURES_PER_DEVICE 3 does not apply)', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await createTestApp({
        LOGIN_MAX_FAILURES_PER_DEVICE: '3',
        LOGIN_MAX_FAILURES_PER_ADDRESS: '1000',
        LOGIN_FAILURE_WINDOW_SEC: String(LOGIN_FAILURE_WINDOW_SEC),
      });
    });
    afterAll(async () => {
      await t.close();
    });

    const failLogins = async (deviceId: string, times: number) => {
      for (let i = 0; i < times; i++) expectProblem(await login(t.api, deviceId, `wrong-${i}`), 401, 'INVALID_CREDENTIALS');
    };

    it('wrong secrets past the per-device number are still checked (401, not 429), and the right secret then logs in', async () => {
      const device = await registerDevice(t.api);
      await failLogins(device.deviceId, 10);

      const { data, response } = await login(t.api, device.deviceId, device.deviceSecret);

      expect(response.status).toBe(200);
      expect((await getMe(t.api, data!.accessToken)).response.status).toBe(200);
    });
  });

  describe('per-address failure limit (5 failures)', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await createTestApp({
        LOGIN_MAX_FAILURES_PER_DEVICE: '1000',
        LOGIN_MAX_FAILURES_PER_ADDRESS: '5',
        LOGIN_FAILURE_WINDOW_SEC: String(LOGIN_FAILURE_WINDOW_SEC),
      });
    });
    afterAll(async () => {
      await t.close();
    });

    it('answers 429 RATE_LIMITED to every login from an address that failed for many deviceIds', async () => {
      const device = await registerDevice(t.api);
      for (let i = 0; i < 5; i++) expectProblem(await login(t.api, aDeviceId(), 'wrong-secret'), 401, 'INVALID_CREDENTIALS');

      const limited = await login(t.api, device.deviceId, device.deviceSecret);

      expectProblem(limited, 429, 'RATE_LIMITED');
      expectRetryAfter(limited.response);
      expect((await deviceRow(t.db, device.deviceId))!.credentials_used_at).toBeNull();
    });
  });
});
