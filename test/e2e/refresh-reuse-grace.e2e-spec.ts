import type pg from 'pg';
import { getMe, refresh, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth } from '../support/customers.js';
import { expectProblem } from '../support/problems.js';

/**
 * A gateway on flaky Wi-Fi whose HTTP client timed out repeats its refresh with the same token
 *: within REFRESH_REUSE_GRACE_SEC, and while the successor is unused, the
 * repeat gets the same pair again instead of reuse detection (RFC 9700 §4.14.2). Older tokens, and
 * repeats after the grace, are still reuse: every token of the subject is voided.
 */

type RefreshResult = { response: Response; data?: { accessToken: string; refreshToken: string }; error?: unknown };

interface Kind {
  /** A fresh subject with its first refresh token. */
  start(t: TestApp): Promise<{ subjectId: string; refreshToken: string }>;
  refresh(t: TestApp, refreshToken: string): Promise<RefreshResult>;
  /** The status of an authenticated call with the access token. */
  me(t: TestApp, accessToken: string): Promise<number>;
  /** The subject's refresh-token rows (oldest first) and token version. */
  state(db: pg.Pool, subjectId: string): Promise<{ tokens: Array<Record<string, unknown>>; tokenVersion: number }>;
}

/** Status and body of a refresh answer, comparable with toEqual; `pair` when it succeeded. */
async function refreshed(t: TestApp, kind: Kind, refreshToken: string) {
  const result = await kind.refresh(t, refreshToken);
  return { status: result.response.status, body: result.data ?? result.error, pair: result.data };
}

const KINDS: Array<[string, Kind]> = [
  [
    'device (POST /api/v1/device/token/refresh)',
    {
      start: async (t) => {
        const device = await registerDevice(t.api);
        return { subjectId: device.deviceId, refreshToken: device.refreshToken };
      },
      refresh: (t, refreshToken) => refresh(t.api, refreshToken),
      me: async (t, accessToken) => (await getMe(t.api, accessToken)).response.status,
      state: async (db, deviceId) => ({
        tokens: (await db.query('SELECT * FROM device_refresh_tokens WHERE device_id = $1 ORDER BY issued_at, id', [deviceId])).rows,
        tokenVersion: (await db.query('SELECT token_version FROM devices WHERE device_id = $1', [deviceId])).rows[0].token_version,
      }),
    },
  ],
  [
    'customer (POST /api/v1/auth/refresh)',
    {
      start: async (t) => {
        const customer = await aVerifiedCustomer(t);
        return { subjectId: customer.userId, refreshToken: customer.refreshToken };
      },
      refresh: (t, refreshToken) => t.api.POST('/api/v1/auth/refresh', { body: { refreshToken } }),
      me: async (t, accessToken) => (await t.api.GET('/api/v1/users/me', { headers: customerAuth(accessToken) })).response.status,
      state: async (db, userId) => ({
        tokens: (await db.query('SELECT * FROM user_refresh_tokens WHERE user_id = $1 ORDER BY issued_at, id', [userId])).rows,
        tokenVersion: (await db.query('SELECT token_version FROM users WHERE id = $1', [userId])).rows[0].token_version,
      }),
    },
  ],
];

describe.each(KINDS)('refresh repeated with the same token: %s', (_name, kind) => {
  describe('within the grace (default REFRESH_REUSE_GRACE_SEC)', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(async () => {
      await t.close();
    });

    it('a sequential repeat: 200 with the same pair, byte for byte, nothing changed; the pair works', async () => {
      const { subjectId, refreshToken } = await kind.start(t);
      const first = await refreshed(t, kind, refreshToken);
      expect(first.status).toBe(200);
      const before = await kind.state(t.db, subjectId);

      const repeat = await refreshed(t, kind, refreshToken);

      expect(repeat).toEqual(first);
      expect(await kind.state(t.db, subjectId)).toEqual(before);
      expect(before.tokens).toHaveLength(2);
      expect(before.tokens.map((token) => token.family_id)).toEqual([before.tokens[0].family_id, before.tokens[0].family_id]);
      expect(await kind.me(t, first.pair!.accessToken)).toBe(200);
      expect((await refreshed(t, kind, first.pair!.refreshToken)).status).toBe(200);
    });

    it('concurrent repeats (three at once): all 200 with the same pair, the subject is not voided, and the successor works', async () => {
      const { subjectId, refreshToken } = await kind.start(t);
      const versionBefore = (await kind.state(t.db, subjectId)).tokenVersion;

      const answers = await Promise.all([1, 2, 3].map(() => refreshed(t, kind, refreshToken)));

      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
      expect(answers[1].body).toEqual(answers[0].body);
      expect(answers[2].body).toEqual(answers[0].body);
      const after = await kind.state(t.db, subjectId);
      expect(after.tokenVersion).toBe(versionBefore);
      expect(after.tokens).toHaveLength(2);
      expect(after.tokens.map((token) => token.revoked_at)).toEqual([null, null]);
      expect(await kind.me(t, answers[0].pair!.accessToken)).toBe(200);
      expect((await refreshed(t, kind, answers[0].pair!.refreshToken)).status).toBe(200);
    });

    it('a token two generations old (its successor was used too): 401 INVALID_TOKEN and every token of the subject voided', async () => {
      const { subjectId, refreshToken } = await kind.start(t);
      const second = await refreshed(t, kind, refreshToken);
      const third = await refreshed(t, kind, second.pair!.refreshToken);
      expect([second.status, third.status]).toEqual([200, 200]);
      const versionBefore = (await kind.state(t.db, subjectId)).tokenVersion;

      expectProblem(await kind.refresh(t, refreshToken), 401, 'INVALID_TOKEN');

      const after = await kind.state(t.db, subjectId);
      expect(after.tokenVersion).toBe(versionBefore + 1);
      expect(after.tokens.every((token) => token.revoked_at instanceof Date)).toBe(true);
      expect((await refreshed(t, kind, third.pair!.refreshToken)).status).toBe(401);
      expect(await kind.me(t, third.pair!.accessToken)).toBe(401);
    });
  });

  describe('after the grace (REFRESH_REUSE_GRACE_SEC 1)', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await createTestApp({ REFRESH_REUSE_GRACE_SEC: '1' });
    });
    afterAll(async () => {
      await t.close();
    });

    it('a repeat is reuse: 401 INVALID_TOKEN, every token voided, the successor refused', async () => {
      const { subjectId, refreshToken } = await kind.start(t);
      const first = await refreshed(t, kind, refreshToken);
      expect(first.status).toBe(200);
      const versionBefore = (await kind.state(t.db, subjectId)).tokenVersion;
      t.clock.advanceMs(2100);

      expectProblem(await kind.refresh(t, refreshToken), 401, 'INVALID_TOKEN');

      const after = await kind.state(t.db, subjectId);
      expect(after.tokenVersion).toBe(versionBefore + 1);
      expect(after.tokens.every((token) => token.revoked_at instanceof Date)).toBe(true);
      expect((await refreshed(t, kind, first.pair!.refreshToken)).status).toBe(401);
      expect(await kind.me(t, first.pair!.accessToken)).toBe(401);
    });
  });
});
