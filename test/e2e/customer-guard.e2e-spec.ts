import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { bearer, getMe, registerDevice } from '../support/builders.js';
import { ADMIN_SETTINGS, anAdmin } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { INVALID_TOKEN_CHALLENGE, NO_TOKEN_CHALLENGE } from '../support/challenges.js';
import { base64url, craftAccessToken, type TokenSpec } from '../support/crafted-tokens.js';
import { aVerifiedCustomer, loginCustomer, type SignedInCustomer } from '../support/customers.js';
import { expectProblem, fieldsOf } from '../support/problems.js';

const decode = (segment: string) => JSON.parse(Buffer.from(segment, 'base64url').toString()) as Record<string, unknown>;

/** Everything a refused call must leave as it was: the account row and its refresh tokens. */
async function accountState(db: pg.Pool, userId: string) {
  const user = await db.query('SELECT * FROM users WHERE id = $1', [userId]);
  const tokens = await db.query('SELECT * FROM user_refresh_tokens WHERE user_id = $1 ORDER BY token_hash', [userId]);
  return { user: user.rows, tokens: tokens.rows };
}

describe('customer access tokens on GET /api/v1/users/me and an admin route', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(ADMIN_SETTINGS);
  });
  afterAll(async () => {
    await t.close();
  });

  /** A customer access token made here, in the session of `customer.accessToken`: every claim right unless the spec changes it. */
  function craftToken(customer: { userId: string; accessToken: string }, spec: TokenSpec = {}): string {
    const sid = decode(customer.accessToken.split('.')[1]).sid;
    return craftAccessToken({ sub: customer.userId, sid, role: 'customer', aud: 'device-cloud:customer' }, t.secrets.customerJwtSecret, spec);
  }

  const usersMe = (headers: Record<string, string>) => t.api.GET('/api/v1/users/me', { headers });
  const adminRoute = (headers: Record<string, string>) => t.api.GET('/api/v1/admin/config/defaults', { headers });

  /**
   * Both routes refuse with a 401 problem whose challenge says the token sent was refused (or,
   * when none was sent, only names the scheme), and the account is untouched.
   */
  async function expectRejected(userId: string, headers: Record<string, string>, challenge = INVALID_TOKEN_CHALLENGE): Promise<void> {
    const before = await accountState(t.db, userId);

    for (const result of [await usersMe(headers), await adminRoute(headers)]) {
      expectProblem(result, 401, 'UNAUTHORIZED');
      expect(result.response.headers.get('www-authenticate')).toBe(challenge);
    }

    expect(await accountState(t.db, userId)).toEqual(before);
  }

  describe('valid tokens', () => {
    it('a customer reads users/me (200) and gets 403 FORBIDDEN from an admin route, account unchanged', async () => {
      const customer = await aVerifiedCustomer(t);
      const before = await accountState(t.db, customer.userId);

      const me = await usersMe(bearer(customer.accessToken));
      expect(me.response.status).toBe(200);
      expect(me.data).toEqual({ userId: customer.userId, email: customer.email, emailVerified: true, role: 'customer', alertEmails: true });
      expectProblem(await adminRoute(bearer(customer.accessToken)), 403, 'FORBIDDEN');

      expect(await accountState(t.db, customer.userId)).toEqual(before);
    });

    it('the administrator reaches the admin route', async () => {
      const admin = await anAdmin(t);

      expect((await adminRoute(admin.headers)).response.status).toBe(200);
    });

    it('a token crafted with the customer key and every claim right is accepted (so the refusals below are about the one thing each changes)', async () => {
      const customer = await aVerifiedCustomer(t);

      const { data, response } = await usersMe(bearer(craftToken(customer)));

      expect(response.status).toBe(200);
      expect(data?.userId).toBe(customer.userId);
    });

    it('the scheme name is case-insensitive (RFC 7235): "bearer" works like "Bearer"', async () => {
      const customer = await aVerifiedCustomer(t);

      expect((await usersMe({ authorization: `bearer ${customer.accessToken}` })).response.status).toBe(200);
    });
  });

  describe('401 problem, account unchanged, for', () => {
    let customer: SignedInCustomer;

    beforeEach(async () => {
      customer = await aVerifiedCustomer(t);
    });

    it('no Authorization header (challenge without error)', async () => {
      await expectRejected(customer.userId, {}, NO_TOKEN_CHALLENGE);
    });

    it.each([
      ['Bearer garbage', () => 'Bearer garbage', INVALID_TOKEN_CHALLENGE],
      ['random base64url in three segments', () => `Bearer ${randomBytes(12).toString('base64url')}.${randomBytes(30).toString('base64url')}.${randomBytes(32).toString('base64url')}`, INVALID_TOKEN_CHALLENGE],
      ['an empty bearer token', () => 'Bearer ', NO_TOKEN_CHALLENGE],
      ['the token without a scheme', () => customer.accessToken, NO_TOKEN_CHALLENGE],
      ['the scheme twice', () => `Bearer Bearer ${customer.accessToken}`, INVALID_TOKEN_CHALLENGE],
      ['two tokens after one scheme', () => `Bearer ${customer.accessToken} ${customer.accessToken}`, INVALID_TOKEN_CHALLENGE],
      ['two Authorization values folded into one', () => `Bearer ${customer.accessToken}, Bearer ${customer.accessToken}`, INVALID_TOKEN_CHALLENGE],
      ['the token under the Basic scheme', () => `Basic ${customer.accessToken}`, NO_TOKEN_CHALLENGE],
    ])('%s', async (_name, authorization, challenge) => {
      await expectRejected(customer.userId, { authorization: authorization() }, challenge);
    });

    it('an unsigned token (alg none)', async () => {
      const [, payload] = craftToken(customer).split('.');

      await expectRejected(customer.userId, bearer(`${base64url({ alg: 'none', typ: 'at+jwt' })}.${payload}.`));
    });

    it('a token signed with RS256 (the service pins HS256)', async () => {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

      await expectRejected(customer.userId, bearer(craftToken(customer, { algorithm: 'RS256', secret: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string })));
    });

    it('a token signed with HS256 under a public-key-like string (HS/RS confusion)', async () => {
      const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const pem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
      const header = base64url({ alg: 'HS256', typ: 'at+jwt' });
      const [, payload] = craftToken(customer).split('.');
      // jsonwebtoken refuses to sign with a PEM as HMAC key, so the signature is made by hand.
      const signature = createHmac('sha256', pem).update(`${header}.${payload}`).digest('base64url');

      await expectRejected(customer.userId, bearer(`${header}.${payload}.${signature}`));
    });

    it('a token signed with the customer key under another algorithm (HS512)', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { algorithm: 'HS512' })));
    });

    it('a token signed with another key', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { secret: randomBytes(32).toString('base64url') })));
    });

    it('a token signed with the device key', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { secret: t.secrets.deviceJwtSecret })));
    });

    it('a token expired beyond the 5-second leeway (one expired 2 seconds ago is still accepted)', async () => {
      const now = Math.floor(Date.now() / 1000);
      expect((await usersMe(bearer(craftToken(customer, { payload: { iat: now - 600, exp: now - 2 } })))).response.status).toBe(200);

      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: { iat: now - 600, exp: now - 30 } })));
    });

    it('a token that is not valid yet (nbf a minute ahead)', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: { nbf: Math.floor(Date.now() / 1000) + 60 } })));
    });

    it('the device audience', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: { aud: 'device-cloud:device' } })));
    });

    it('another issuer', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: { iss: 'someone-else' } })));
    });

    it('another token type in the header (typ JWT)', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { header: { typ: 'JWT' } })));
    });

    it('a token without the token version claim', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: { tv: undefined } })));
    });

    it('a token of an unknown account', async () => {
      await expectRejected(customer.userId, bearer(craftToken({ userId: '00000000-0000-4000-8000-000000000000', accessToken: customer.accessToken })));
    });

    it('the role rewritten customer → admin under the original signature', async () => {
      const [header, payload, signature] = customer.accessToken.split('.');
      const rewritten = base64url({ ...decode(payload), role: 'admin' });

      await expectRejected(customer.userId, bearer(`${header}.${rewritten}.${signature}`));
    });

    it('a payload rewritten for another account under the original signature', async () => {
      const other = await aVerifiedCustomer(t);
      const [header, payload, signature] = other.accessToken.split('.');

      await expectRejected(customer.userId, bearer(`${header}.${base64url({ ...decode(payload), sub: customer.userId })}.${signature}`));
    });

    it('a customer refresh token presented as an access token', async () => {
      await expectRejected(customer.userId, bearer(customer.refreshToken));
    });

    it('a device access token', async () => {
      const device = await registerDevice(t.api);

      await expectRejected(customer.userId, bearer(device.accessToken));
    });

    it('a token issued before the token version was bumped (a refresh token two generations old was replayed)', async () => {
      const rotated = await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.refreshToken } });
      expect(rotated.response.status).toBe(200);
      const again = await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: rotated.data!.refreshToken } });
      expect(again.response.status).toBe(200);
      expectProblem(await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.refreshToken } }), 401, 'INVALID_TOKEN');
      expect((await accountState(t.db, customer.userId)).user[0].token_version).toBe(2);

      await expectRejected(customer.userId, bearer(customer.accessToken));
      await expectRejected(customer.userId, bearer(rotated.data!.accessToken));
      await expectRejected(customer.userId, bearer(again.data!.accessToken));
    });

    it('a token without exp (RFC 8725: every access token expires)', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: { exp: undefined } })));
    });

    it('a token without iat', async () => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: { iat: undefined } })));
    });

    it.each([
      ['exp', () => ({ exp: String(Math.floor(Date.now() / 1000) + 300) })],
      ['iat', () => ({ iat: String(Math.floor(Date.now() / 1000)) })],
    ])('a token whose %s is not a number', async (_claim, payload) => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: payload() })));
    });

    it('a token issued a minute in the future (one issued 2 seconds ahead is still accepted)', async () => {
      const now = Math.floor(Date.now() / 1000);
      expect((await usersMe(bearer(craftToken(customer, { payload: { iat: now + 2, exp: now + 302 } })))).response.status).toBe(200);

      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: { iat: now + 60, exp: now + 360 } })));
    });

    it.each([
      ['without a session (sid), as signed before sessions existed', () => ({ sid: undefined })],
      ['with a session id that is not a UUID', () => ({ sid: 'session-1' })],
      ['naming a session that does not exist', () => ({ sid: '00000000-0000-4000-8000-000000000000' })],
    ])('a token %s', async (_name, payload) => {
      await expectRejected(customer.userId, bearer(craftToken(customer, { payload: payload() })));
    });

    it("a token naming another account's session", async () => {
      const other = await aVerifiedCustomer(t);

      await expectRejected(customer.userId, bearer(craftToken({ userId: customer.userId, accessToken: other.accessToken })));
      expect((await usersMe(bearer(other.accessToken))).response.status).toBe(200);
    });

    it('a token of a deleted account', async () => {
      await t.db.query('DELETE FROM users WHERE id = $1', [customer.userId]);

      expectProblem(await usersMe(bearer(customer.accessToken)), 401, 'UNAUTHORIZED');
      expectProblem(await adminRoute(bearer(customer.accessToken)), 401, 'UNAUTHORIZED');
      expect(await accountState(t.db, customer.userId)).toEqual({ user: [], tokens: [] });
    });
  });

  describe('logout (POST /api/v1/auth/logout) ends the session at once', () => {
    const logout = (refreshToken: string) => t.api.POST('/api/v1/auth/logout', { body: { refreshToken } });

    it("the session's access token is refused right away; another session of the same account keeps working", async () => {
      const customer = await aVerifiedCustomer(t);
      const other = await loginCustomer(t.api, customer.email, customer.password);
      expect((await usersMe(bearer(customer.accessToken))).response.status).toBe(200);

      expect((await logout(customer.refreshToken)).response.status).toBe(204);

      await expectRejected(customer.userId, bearer(customer.accessToken));
      expect((await usersMe(bearer(other.accessToken))).response.status).toBe(200);
      expect((await adminRoute(bearer(other.accessToken))).response.status).toBe(403);
      expect((await accountState(t.db, customer.userId)).user[0].token_version).toBe(1);
    });

    it('every access token of the session, those from earlier rotations too; a new login opens a working session', async () => {
      const customer = await aVerifiedCustomer(t);
      const rotated = await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.refreshToken } });
      expect(rotated.response.status).toBe(200);

      expect((await logout(rotated.data!.refreshToken)).response.status).toBe(204);

      await expectRejected(customer.userId, bearer(customer.accessToken));
      await expectRejected(customer.userId, bearer(rotated.data!.accessToken));
      const tokens = (await accountState(t.db, customer.userId)).tokens;
      expect(tokens).toHaveLength(2);
      expect(tokens.every((token) => token.revoked_at instanceof Date)).toBe(true);
      const again = await loginCustomer(t.api, customer.email, customer.password);
      expect((await usersMe(bearer(again.accessToken))).response.status).toBe(200);
    });
  });

  describe('tokens of one kind where the other is expected', () => {
    it('a customer access token on the refresh endpoint: 400 VALIDATION_FAILED (longer than any refresh token), nothing issued', async () => {
      const customer = await aVerifiedCustomer(t);
      const before = await accountState(t.db, customer.userId);

      const problem = expectProblem(await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: customer.accessToken } }), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(problem)).toEqual(['refreshToken']);

      expect(await accountState(t.db, customer.userId)).toEqual(before);
    });

    it('a customer access token on a device route: 401, device untouched', async () => {
      const customer = await aVerifiedCustomer(t);
      const device = await registerDevice(t.api);

      expectProblem(await getMe(t.api, customer.accessToken), 401, 'UNAUTHORIZED');
      expectProblem(await getMe(t.api, craftToken({ userId: device.deviceId, accessToken: customer.accessToken })), 401, 'UNAUTHORIZED');

      const row = await t.db.query('SELECT credentials_used_at FROM devices WHERE device_id = $1', [device.deviceId]);
      expect(row.rows[0].credentials_used_at).toBeNull();
    });
  });
});
