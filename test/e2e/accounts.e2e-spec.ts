import { createHmac, randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { aRegistration, bearer, refresh as refreshDevice, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aSignup, anEmail, aVerifiedCustomer, customerAuth, loginCustomer, signUp } from '../support/customers.js';
import { eventually } from '../support/eventually.js';
import { expectProblem, fieldsOf, type Problem } from '../support/problems.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from '../support/smtp-sink.js';

const PUBLIC_BASE_URL = 'https://dash.example';
const MAIL_FROM = 'Device Cloud Test <accounts@dash.example>';
const ACCESS_TOKEN_TTL_SEC = 600;
const LOGIN_FAILURE_WINDOW_SEC = 900;

interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  role: 'customer' | 'admin';
  email_verified_at: Date | null;
  token_version: number;
  created_at: Date;
}

interface VerificationTokenRow {
  token_hash: string;
  user_id: string;
  expires_at: Date;
  used_at: Date | null;
}

interface UserRefreshTokenRow {
  id: string;
  user_id: string;
  token_hash: string;
  token_version: number;
  issued_at: Date;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}

function withoutCorrelation({ requestId: _requestId, instance: _instance, ...rest }: Problem): Omit<Problem, 'requestId' | 'instance'> {
  return rest;
}

function expectRetryAfter(response: Response, maxSec: number): void {
  const retryAfter = response.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThan(0);
  expect(Number(retryAfter)).toBeLessThanOrEqual(maxSec);
}

/** Database and API helpers bound to one test app. */
function helpersFor(getApp: () => TestApp) {
  const t = () => getApp();
  return {
    hmac: (value: string) => createHmac('sha256', t().secrets.pepper).update(value, 'utf8').digest('hex'),
    userRows: async (email: string) => (await t().db.query<UserRow>('SELECT * FROM users WHERE email = $1', [email])).rows,
    userRow: async (userId: string) => (await t().db.query<UserRow>('SELECT * FROM users WHERE id = $1', [userId])).rows[0],
    userCount: async () => (await t().db.query<{ count: number }>('SELECT count(*)::int AS count FROM users')).rows[0].count,
    verificationTokens: async (userId: string) =>
      (await t().db.query<VerificationTokenRow>('SELECT * FROM email_verification_tokens WHERE user_id = $1 ORDER BY expires_at', [userId])).rows,
    refreshTokens: async (userId: string) =>
      (await t().db.query<UserRefreshTokenRow>('SELECT * FROM user_refresh_tokens WHERE user_id = $1 ORDER BY issued_at, id', [userId])).rows,
    getMe: (accessToken: string) => t().api.GET('/api/v1/users/me', { headers: customerAuth(accessToken) }),
    login: (email: string, password: string) => t().api.POST('/api/v1/auth/login', { body: { email, password } }),
    refresh: (refreshToken: string) => t().api.POST('/api/v1/auth/refresh', { body: { refreshToken } }),
    logout: (refreshToken: string) => t().api.POST('/api/v1/auth/logout', { body: { refreshToken } }),
    verify: (token: string) => t().api.POST('/api/v1/auth/verify-email', { body: { token } }),
    resend: (accessToken: string) => t().api.POST('/api/v1/auth/resend-verification', { headers: customerAuth(accessToken) }),
  };
}

describe('customer accounts', () => {
  describe('with an SMTP server and limits that never trigger', () => {
    let t: TestApp;
    let sink: SmtpSink;
    const h = helpersFor(() => t);

    beforeAll(async () => {
      sink = await startSmtpSink();
      t = await createTestApp({
        SMTP_URL: sink.url,
        MAIL_FROM,
        PUBLIC_BASE_URL,
        RESEND_VERIFICATION_MAX_PER_HOUR: '2',
        CUSTOMER_ACCESS_TOKEN_TTL_SEC: String(ACCESS_TOKEN_TTL_SEC),
        CUSTOMER_REFRESH_TOKEN_TTL_DAYS: '7',
        LOGIN_MAX_FAILURES_PER_DEVICE: '1000',
        LOGIN_MAX_FAILURES_PER_ADDRESS: '100000',
      });
    });
    afterAll(async () => {
      await t?.close();
      await sink?.close();
    });

    /** The token of the verification link in a mail; fails when the mail has no such link. */
    function linkTokenOf(mail: ReceivedMail): string {
      const match = /https:\/\/dash\.example\/verify-email\?token=(\S+)/.exec(mail.text);
      if (!match) throw new Error(`no verification link in: ${mail.text}`);
      return decodeURIComponent(match[1]);
    }

    /** A customer whose verification link arrived; the mail is consumed from the sink. */
    async function aCustomerWithLink(): Promise<{ userId: string; email: string; password: string; token: string }> {
      const customer = await signUp(t);
      return { ...customer, token: linkTokenOf(await sink.waitForMessage(customer.email)) };
    }

    describe('POST /api/v1/auth/signup', () => {
      it('answers 201 with the address only and stores the unverified account as a customer', async () => {
        const body = aSignup();

        const { data, response } = await t.api.POST('/api/v1/auth/signup', { body });

        expect(response.status).toBe(201);
        expect(data).toEqual({ email: body.email });
        const rows = await h.userRows(body.email);
        expect(rows).toEqual([
          expect.objectContaining({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), email: body.email, role: 'customer', email_verified_at: null, token_version: 1, created_at: expect.any(Date) }),
        ]);
      });

      it('stores the address trimmed and lower-cased', async () => {
        const local = `Ada-${randomBytes(4).toString('hex')}`;

        const { data, response } = await t.api.POST('/api/v1/auth/signup', { body: aSignup({ email: ` ${local}@Example.COM ` }) });

        expect(response.status).toBe(201);
        const normalized = `${local.toLowerCase()}@example.com`;
        expect(data?.email).toBe(normalized);
        expect(await h.userRows(normalized)).toHaveLength(1);
      });

      it('stores the password only as an argon2id hash', async () => {
        const body = aSignup();

        await t.api.POST('/api/v1/auth/signup', { body });

        const [row] = await h.userRows(body.email);
        expect(row.password_hash).toMatch(/^\$argon2id\$/);
        expect(row.password_hash).not.toContain(body.password);
      });

      it.each([
        ['10', 10],
        ['128', 128],
      ])('accepts a password of %s characters', async (_name, length) => {
        const { response } = await t.api.POST('/api/v1/auth/signup', { body: aSignup({ password: randomBytes(64).toString('hex').slice(0, length) }) });

        expect(response.status).toBe(201);
      });

      it.each([
        ['9', 9],
        ['129', 129],
      ])('refuses a password of %s characters with 400 VALIDATION_FAILED naming password, writing nothing', async (_name, length) => {
        const body = aSignup({ password: 'p'.repeat(length) });

        const problem = expectProblem(await t.api.POST('/api/v1/auth/signup', { body }), 400, 'VALIDATION_FAILED');

        expect(fieldsOf(problem)).toEqual(['password']);
        expect(await h.userRows(body.email)).toEqual([]);
      });

      it.each(['not-an-email', 'ada@', '@example.com', 'ada example@example.com', ''])(
        'refuses the address %j with 400 VALIDATION_FAILED naming email',
        async (email) => {
          const before = await h.userCount();

          const problem = expectProblem(await t.api.POST('/api/v1/auth/signup', { body: aSignup({ email }) }), 400, 'VALIDATION_FAILED');

          expect(fieldsOf(problem)).toContain('email');
          expect(fieldsOf(problem)).not.toContain('password');
          expect(await h.userCount()).toBe(before);
        },
      );

      it('refuses an unknown property (here: role) with 400 VALIDATION_FAILED, writing nothing', async () => {
        const body = { ...aSignup(), role: 'admin' };

        const problem = expectProblem(await t.api.POST('/api/v1/auth/signup', { body: body as never }), 400, 'VALIDATION_FAILED');

        expect(fieldsOf(problem)).toEqual(['role']);
        expect(await h.userRows(body.email)).toEqual([]);
      });

      it('answers a taken address (in another case) exactly like a new one: no second row, first password kept, the owner told by mail', async () => {
        const first = await signUp(t);
        await sink.waitForMessage(first.email);
        const [before] = await h.userRows(first.email);
        const fresh = aSignup();

        const taken = await t.api.POST('/api/v1/auth/signup', { body: aSignup({ email: first.email.toUpperCase() }) });
        const created = await t.api.POST('/api/v1/auth/signup', { body: fresh });

        expect([taken.response.status, created.response.status]).toEqual([201, 201]);
        expect(taken.data).toEqual({ email: first.email });
        expect(created.data).toEqual({ email: fresh.email });
        expect(taken.response.headers.get('content-type')).toBe(created.response.headers.get('content-type'));
        expect(await h.userRows(first.email)).toEqual([before]);
        const notice = await sink.waitForMessage(first.email);
        expect(notice.subject).toBe('Someone tried to sign up with your e-mail address');
        expect(notice.text).not.toMatch(/verify-email\?token=/);
        expect(sink.messagesTo(first.email)).toHaveLength(2);
        expect((await h.login(first.email, first.password)).response.status).toBe(200);
      });

      it.each(['password123', '1234567890', 'qwertyuiop', 'Password123', 'aaaaaaaaaaaa'])(
        'refuses the common password %j with 400 PASSWORD_TOO_COMMON naming password, writing and mailing nothing',
        async (password) => {
          const body = aSignup({ password });

          const problem = expectProblem(await t.api.POST('/api/v1/auth/signup', { body }), 400, 'PASSWORD_TOO_COMMON');

          expect(fieldsOf(problem)).toEqual(['password']);
          expect(problem.detail).not.toContain(password);
          expect(await h.userRows(body.email)).toEqual([]);
          expect(sink.messagesTo(body.email)).toEqual([]);
        },
      );

      it('refuses a password that contains the address with 400 PASSWORD_TOO_COMMON', async () => {
        const email = anEmail('grace');

        const problem = expectProblem(await t.api.POST('/api/v1/auth/signup', { body: { email, password: `${email.split('@')[0]}!` } }), 400, 'PASSWORD_TOO_COMMON');

        expect(fieldsOf(problem)).toEqual(['password']);
        expect(await h.userRows(email)).toEqual([]);
      });
    });

    describe('e-mail verification over SMTP', () => {
      it('sends one mail from MAIL_FROM to the address, with a link under PUBLIC_BASE_URL', async () => {
        const customer = await signUp(t);

        const mail = await sink.waitForMessage(customer.email);

        expect(mail).toEqual(
          expect.objectContaining({ to: [customer.email], from: MAIL_FROM, envelopeFrom: 'accounts@dash.example', subject: 'Confirm your e-mail address' }),
        );
        expect(mail.text).toContain(`${PUBLIC_BASE_URL}/verify-email?token=`);
        expect(linkTokenOf(mail)).toMatch(/^[A-Za-z0-9_-]{43}$/);
        expect(sink.messagesTo(customer.email)).toHaveLength(1);
      });

      it('stores the link token only as a hash, valid for 24 hours', async () => {
        const customer = await aCustomerWithLink();

        const tokens = await h.verificationTokens(customer.userId);

        expect(tokens).toEqual([expect.objectContaining({ token_hash: h.hmac(customer.token), used_at: null })]);
        expect(tokens[0].token_hash).not.toBe(customer.token);
        expect(JSON.stringify(tokens)).not.toContain(customer.token);
        const lifetimeSec = (tokens[0].expires_at.getTime() - (await h.userRow(customer.userId)).created_at.getTime()) / 1000;
        expect(Math.abs(lifetimeSec - 86_400)).toBeLessThan(60);
      });

      it('POST /api/v1/auth/verify-email with the link token: 200, and the account is verified', async () => {
        const customer = await aCustomerWithLink();

        const { data, response } = await h.verify(customer.token);

        expect(response.status).toBe(200);
        expect(data).toEqual({ emailVerified: true });
        expect((await h.userRow(customer.userId)).email_verified_at).toBeInstanceOf(Date);
        expect((await h.verificationTokens(customer.userId))[0].used_at).toBeInstanceOf(Date);
        const { accessToken } = await loginCustomer(t.api, customer.email, customer.password);
        expect((await h.getMe(accessToken)).data?.emailVerified).toBe(true);
      });

      it('a session refused a claim before the link may claim on its very next call after it', async () => {
        const customer = await aCustomerWithLink();
        const { accessToken } = await loginCustomer(t.api, customer.email, customer.password);
        const device = aRegistration();
        await registerDevice(t.api, device);
        const claim = () =>
          t.api.POST('/api/v1/user/devices/claim', { headers: customerAuth(accessToken), body: { deviceId: device.deviceId, claimCode: device.claimCode } });
        expectProblem(await claim(), 403, 'EMAIL_NOT_VERIFIED');

        expect((await h.verify(customer.token)).response.status).toBe(200);

        const { data, response } = await claim();
        expect(response.status).toBe(200);
        expect(data?.ownerId).toBe(customer.userId);
      });

      it('refuses the same token a second time with 400 INVALID_TOKEN and changes nothing', async () => {
        const customer = await aCustomerWithLink();
        expect((await h.verify(customer.token)).response.status).toBe(200);
        const before = { user: await h.userRow(customer.userId), tokens: await h.verificationTokens(customer.userId) };

        expectProblem(await h.verify(customer.token), 400, 'INVALID_TOKEN');

        expect({ user: await h.userRow(customer.userId), tokens: await h.verificationTokens(customer.userId) }).toEqual(before);
      });

      it('refuses a token that was never issued with 400 INVALID_TOKEN', async () => {
        expectProblem(await h.verify(randomBytes(32).toString('base64url')), 400, 'INVALID_TOKEN');
      });

      it('refuses an expired token with 400 INVALID_TOKEN; the account stays unverified', async () => {
        const customer = await aCustomerWithLink();
        await t.db.query(`UPDATE email_verification_tokens SET expires_at = now() - interval '1 minute' WHERE user_id = $1`, [customer.userId]);

        expectProblem(await h.verify(customer.token), 400, 'INVALID_TOKEN');

        expect((await h.userRow(customer.userId)).email_verified_at).toBeNull();
        expect((await h.verificationTokens(customer.userId))[0].used_at).toBeNull();
      });

      it('refuses an empty token with 400 VALIDATION_FAILED naming token', async () => {
        const problem = expectProblem(await h.verify(''), 400, 'VALIDATION_FAILED');

        expect(fieldsOf(problem)).toEqual(['token']);
      });
    });

    describe('POST /api/v1/auth/resend-verification', () => {
      it('answers 202 and mails a new link that verifies the address', async () => {
        const customer = await aCustomerWithLink();
        const { accessToken } = await loginCustomer(t.api, customer.email, customer.password);

        const { response } = await h.resend(accessToken);

        expect(response.status).toBe(202);
        const newToken = linkTokenOf(await sink.waitForMessage(customer.email));
        expect(newToken).not.toBe(customer.token);
        expect((await h.verificationTokens(customer.userId)).map((row) => row.token_hash).sort()).toEqual([h.hmac(customer.token), h.hmac(newToken)].sort());
        expect((await h.verify(newToken)).data).toEqual({ emailVerified: true });
      });

      it('answers 429 RATE_LIMITED with Retry-After after RESEND_VERIFICATION_MAX_PER_HOUR (2) calls, sending no more mail', async () => {
        const customer = await aCustomerWithLink();
        const { accessToken } = await loginCustomer(t.api, customer.email, customer.password);
        for (let i = 0; i < 2; i++) {
          expect((await h.resend(accessToken)).response.status).toBe(202);
          await sink.waitForMessage(customer.email);
        }

        const limited = await h.resend(accessToken);

        expectProblem(limited, 429, 'RATE_LIMITED');
        expectRetryAfter(limited.response, 3600);
        expect(sink.messagesTo(customer.email)).toHaveLength(3);
        expect(await h.verificationTokens(customer.userId)).toHaveLength(3);
      });

      it('limits each account on its own: another customer still gets a link', async () => {
        const limited = await aCustomerWithLink();
        const limitedToken = (await loginCustomer(t.api, limited.email, limited.password)).accessToken;
        for (let i = 0; i < 2; i++) await h.resend(limitedToken);
        expectProblem(await h.resend(limitedToken), 429, 'RATE_LIMITED');
        const other = await aCustomerWithLink();
        const otherToken = (await loginCustomer(t.api, other.email, other.password)).accessToken;

        expect((await h.resend(otherToken)).response.status).toBe(202);
        await sink.waitForMessage(other.email);
      });

      it('answers 401 without a bearer token', async () => {
        expectProblem(await t.api.POST('/api/v1/auth/resend-verification'), 401, 'UNAUTHORIZED');
      });

      it('answers 202 for a verified account and enqueues no mail', async () => {
        const customer = await signUp(t);
        await sink.waitForMessage(customer.email);
        await t.db.query('UPDATE users SET email_verified_at = now() WHERE id = $1', [customer.userId]);
        const { accessToken } = await loginCustomer(t.api, customer.email, customer.password);

        const { response } = await h.resend(accessToken);

        expect(response.status).toBe(202);
        // Only the sign-up's job exists: the resend enqueued nothing.
        const { rows } = await t.db.query(`SELECT id FROM pgboss.job WHERE name = 'mail.verification' AND data->>'userId' = $1`, [customer.userId]);
        expect(rows).toHaveLength(1);
        expect(await h.verificationTokens(customer.userId)).toHaveLength(1);
      });
    });

    describe('POST /api/v1/auth/login', () => {
      it('answers 200 with a token pair; the refresh token is stored only as a hash', async () => {
        const customer = await signUp(t);

        const { data, response } = await h.login(customer.email, customer.password);

        expect(response.status).toBe(200);
        expect(data).toEqual({
          accessToken: expect.any(String),
          refreshToken: expect.stringMatching(/^ucr_[A-Za-z0-9_-]{43}$/),
          tokenType: 'Bearer',
          expiresIn: ACCESS_TOKEN_TTL_SEC,
        });
        expect(await h.refreshTokens(customer.userId)).toEqual([
          expect.objectContaining({ token_hash: h.hmac(data!.refreshToken), token_version: 1, rotated_at: null, revoked_at: null }),
        ]);
      });

      it('lets an unverified customer in', async () => {
        const customer = await signUp(t);

        const { data } = await h.login(customer.email, customer.password);

        expect((await h.getMe(data!.accessToken)).data).toEqual(expect.objectContaining({ userId: customer.userId, emailVerified: false }));
      });

      it('matches the address trimmed and case-insensitively', async () => {
        const customer = await signUp(t);

        const { response } = await h.login(`  ${customer.email.toUpperCase()} `, customer.password);

        expect(response.status).toBe(200);
      });

      it('answers a wrong password and an unknown address with the same 401 INVALID_CREDENTIALS', async () => {
        const customer = await signUp(t);
        const before = await h.userRow(customer.userId);

        const wrongPassword = expectProblem(await h.login(customer.email, `${customer.password}x`), 401, 'INVALID_CREDENTIALS');
        const unknown = expectProblem(await h.login(anEmail(), customer.password), 401, 'INVALID_CREDENTIALS');

        expect(withoutCorrelation(wrongPassword)).toEqual(withoutCorrelation(unknown));
        expect(await h.userRow(customer.userId)).toEqual(before);
        expect(await h.refreshTokens(customer.userId)).toEqual([]);
      });

      it('refuses a body without password with 400 VALIDATION_FAILED naming password', async () => {
        const problem = expectProblem(await t.api.POST('/api/v1/auth/login', { body: { email: anEmail() } as never }), 400, 'VALIDATION_FAILED');

        expect(new Set(fieldsOf(problem))).toEqual(new Set(['password']));
      });
    });

    describe('POST /api/v1/auth/refresh', () => {
      it('answers 200 with a new pair and marks the presented token rotated', async () => {
        const customer = await signUp(t);
        const first = await loginCustomer(t.api, customer.email, customer.password);

        const { data, response } = await h.refresh(first.refreshToken);

        expect(response.status).toBe(200);
        expect(data).toEqual({ accessToken: expect.any(String), refreshToken: expect.stringMatching(/^ucr_/), tokenType: 'Bearer', expiresIn: ACCESS_TOKEN_TTL_SEC });
        expect(data!.refreshToken).not.toBe(first.refreshToken);
        expect((await h.getMe(data!.accessToken)).data?.userId).toBe(customer.userId);
        const [used, issued] = await h.refreshTokens(customer.userId);
        expect(used).toEqual(expect.objectContaining({ token_hash: h.hmac(first.refreshToken), rotated_at: expect.any(Date), revoked_at: null }));
        expect(issued).toEqual(expect.objectContaining({ token_hash: h.hmac(data!.refreshToken), token_version: 1, rotated_at: null, revoked_at: null }));
        expect((await h.refresh(data!.refreshToken)).response.status).toBe(200);
      });

      it('issues refresh tokens that expire after CUSTOMER_REFRESH_TOKEN_TTL_DAYS (7)', async () => {
        const customer = await signUp(t);
        await loginCustomer(t.api, customer.email, customer.password);

        const [token] = await h.refreshTokens(customer.userId);

        const lifetimeSec = (token.expires_at.getTime() - token.issued_at.getTime()) / 1000;
        expect(Math.abs(lifetimeSec - 7 * 86_400)).toBeLessThan(60);
      });

      it('refuses an expired refresh token with 401 INVALID_TOKEN', async () => {
        const customer = await signUp(t);
        const pair = await loginCustomer(t.api, customer.email, customer.password);
        await t.db.query(`UPDATE user_refresh_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [customer.userId]);

        expectProblem(await h.refresh(pair.refreshToken), 401, 'INVALID_TOKEN');
      });

      it.each([
        ['garbage', () => 'garbage'],
        ['a well-formed token that was never issued', () => `ucr_${randomBytes(32).toString('base64url')}`],
      ])('refuses %s with 401 INVALID_TOKEN', async (_name, token) => {
        expectProblem(await h.refresh(token()), 401, 'INVALID_TOKEN');
      });

      describe('presenting a token that was already rotated, after the reuse grace (reuse)', () => {
        /** As if REFRESH_REUSE_GRACE_SEC had passed since the user's rotations (refresh-reuse-grace.e2e-spec.ts waits for real). */
        const pastTheGrace = (userId: string) =>
          t.db.query(`UPDATE user_refresh_tokens SET rotated_at = rotated_at - interval '1 hour' WHERE user_id = $1 AND rotated_at IS NOT NULL`, [userId]);

        it('answers 401 INVALID_TOKEN, revokes every refresh token of the user and bumps token_version', async () => {
          const customer = await signUp(t);
          const first = await loginCustomer(t.api, customer.email, customer.password);
          const second = (await h.refresh(first.refreshToken)).data!;
          await pastTheGrace(customer.userId);

          expectProblem(await h.refresh(first.refreshToken), 401, 'INVALID_TOKEN');

          expect((await h.userRow(customer.userId)).token_version).toBe(2);
          const tokens = await h.refreshTokens(customer.userId);
          expect(tokens).toHaveLength(2);
          expect(tokens.every((token) => token.revoked_at !== null)).toBe(true);
          expectProblem(await h.refresh(second.refreshToken), 401, 'INVALID_TOKEN');
        });

        it('rejects every access token issued before on GET /api/v1/users/me', async () => {
          const customer = await signUp(t);
          const first = await loginCustomer(t.api, customer.email, customer.password);
          const second = (await h.refresh(first.refreshToken)).data!;
          expect((await h.getMe(first.accessToken)).response.status).toBe(200);
          await pastTheGrace(customer.userId);

          await h.refresh(first.refreshToken);

          expectProblem(await h.getMe(first.accessToken), 401, 'UNAUTHORIZED');
          expectProblem(await h.getMe(second.accessToken), 401, 'UNAUTHORIZED');
        });

        it('leaves the password valid and other accounts untouched', async () => {
          const customer = await signUp(t);
          const bystander = await signUp(t);
          const bystanderPair = await loginCustomer(t.api, bystander.email, bystander.password);
          const first = await loginCustomer(t.api, customer.email, customer.password);
          await h.refresh(first.refreshToken);
          await pastTheGrace(customer.userId);
          expectProblem(await h.refresh(first.refreshToken), 401, 'INVALID_TOKEN');

          const again = await loginCustomer(t.api, customer.email, customer.password);

          expect((await h.getMe(again.accessToken)).response.status).toBe(200);
          expect((await h.refresh(again.refreshToken)).response.status).toBe(200);
          expect((await h.userRow(bystander.userId)).token_version).toBe(1);
          expect((await h.getMe(bystanderPair.accessToken)).response.status).toBe(200);
          expect((await h.refresh(bystanderPair.refreshToken)).response.status).toBe(200);
        });
      });
    });

    describe('POST /api/v1/auth/logout', () => {
      it('answers 204 and the refresh token and the access token of the session stop working; other sessions keep theirs', async () => {
        const customer = await signUp(t);
        const session = await loginCustomer(t.api, customer.email, customer.password);
        const otherSession = await loginCustomer(t.api, customer.email, customer.password);

        const { response } = await h.logout(session.refreshToken);

        expect(response.status).toBe(204);
        const rows = await h.refreshTokens(customer.userId);
        expect(rows.find((row) => row.token_hash === h.hmac(session.refreshToken))?.revoked_at).toBeInstanceOf(Date);
        expectProblem(await h.refresh(session.refreshToken), 401, 'INVALID_TOKEN');
        expect((await h.userRow(customer.userId)).token_version).toBe(1);
        expectProblem(await h.getMe(session.accessToken), 401, 'UNAUTHORIZED');
        expect((await h.getMe(otherSession.accessToken)).response.status).toBe(200);
        expect((await h.refresh(otherSession.refreshToken)).response.status).toBe(200);
      });

      it('answers 204 for a token it does not know, changing nothing', async () => {
        const before = (await t.db.query('SELECT * FROM user_refresh_tokens ORDER BY id')).rows;

        const { response } = await h.logout(`ucr_${randomBytes(32).toString('base64url')}`);

        expect(response.status).toBe(204);
        expect((await t.db.query('SELECT * FROM user_refresh_tokens ORDER BY id')).rows).toEqual(before);
      });

      it('answers 204 again for a token already logged out', async () => {
        const customer = await signUp(t);
        const session = await loginCustomer(t.api, customer.email, customer.password);
        await h.logout(session.refreshToken);

        expect((await h.logout(session.refreshToken)).response.status).toBe(204);
      });
    });

    describe('GET /api/v1/users/me', () => {
      it('answers the signed-in account', async () => {
        const customer = await signUp(t);
        const { accessToken } = await loginCustomer(t.api, customer.email, customer.password);

        const { data, response } = await h.getMe(accessToken);

        expect(response.status).toBe(200);
        expect(data).toEqual({ userId: customer.userId, email: customer.email, emailVerified: false, role: 'customer', alertEmails: true });
      });

      it('PATCH turns alert e-mails off and on; a body without a boolean alertEmails is a 400 that changes nothing', async () => {
        const customer = await signUp(t);
        const { accessToken } = await loginCustomer(t.api, customer.email, customer.password);
        const patch = (body: unknown) => t.api.PATCH('/api/v1/users/me', { body: body as { alertEmails: boolean }, headers: customerAuth(accessToken) });

        const off = await patch({ alertEmails: false });
        expect(off.response.status).toBe(200);
        expect(off.data).toMatchObject({ userId: customer.userId, alertEmails: false });
        for (const bad of [{}, { alertEmails: 'no' }, { alertEmails: true, role: 'admin' }]) expectProblem(await patch(bad), 400, 'VALIDATION_FAILED');
        expect((await h.getMe(accessToken)).data).toMatchObject({ alertEmails: false, role: 'customer' });
        expect((await patch({ alertEmails: true })).data).toMatchObject({ alertEmails: true });
      });

      it('answers 401 without a bearer token', async () => {
        expectProblem(await t.api.GET('/api/v1/users/me'), 401, 'UNAUTHORIZED');
      });
    });

    describe('customer and device tokens are kept apart', () => {
      /** A customer access token made here: every claim right unless the spec changes it. */
      function craftToken(session: { userId: string; sid: string }, spec: { payload?: Record<string, unknown>; header?: Record<string, unknown>; secret?: string } = {}): string {
        const now = Math.floor(Date.now() / 1000);
        const payload = { sub: session.userId, sid: session.sid, tv: 1, role: 'customer', aud: 'device-cloud:customer', iss: 'device-cloud', iat: now, exp: now + 300, ...spec.payload };
        return jwt.sign(payload, spec.secret ?? t.secrets.customerJwtSecret, { algorithm: 'HS256', header: { alg: 'HS256', typ: 'at+jwt', ...spec.header } });
      }

      /** Signs up and logs in: the account and the session (sid) its access tokens name. */
      async function aSession(): Promise<{ userId: string; sid: string }> {
        const customer = await signUp(t);
        const { accessToken } = await loginCustomer(t.api, customer.email, customer.password);
        return { userId: customer.userId, sid: (jwt.decode(accessToken) as { sid: string }).sid };
      }

      it('accepts a token made here with every claim right (so the refusals below are meaningful)', async () => {
        const session = await aSession();

        const { data, response } = await h.getMe(craftToken(session));

        expect(response.status).toBe(200);
        expect(data?.userId).toBe(session.userId);
      });

      it.each([
        ['signed with the device key', () => ({ secret: t.secrets.deviceJwtSecret })],
        ['with the device audience', () => ({ payload: { aud: 'device-cloud:device' } })],
        ['from another issuer', () => ({ payload: { iss: 'someone-else' } })],
        ['of another type (typ JWT)', () => ({ header: { typ: 'JWT' } })],
        ['expired a minute ago', () => ({ payload: { iat: Math.floor(Date.now() / 1000) - 960, exp: Math.floor(Date.now() / 1000) - 60 } })],
        ['with a token version the account does not have', () => ({ payload: { tv: 2 } })],
      ])('refuses a customer token %s on GET /api/v1/users/me with 401', async (_name, spec) => {
        const session = await aSession();

        expectProblem(await h.getMe(craftToken(session, spec())), 401, 'UNAUTHORIZED');
      });

      it('refuses a device access token on GET /api/v1/users/me with 401', async () => {
        const device = await registerDevice(t.api);

        expectProblem(await t.api.GET('/api/v1/users/me', { headers: bearer(device.accessToken) }), 401, 'UNAUTHORIZED');
      });

      it('refuses a customer access token on GET /api/v1/device/me with 401', async () => {
        const customer = await aVerifiedCustomer(t);

        expectProblem(await t.api.GET('/api/v1/device/me', { headers: bearer(customer.accessToken) }), 401, 'UNAUTHORIZED');
      });

      it('refuses a device refresh token on /auth/refresh, and a customer refresh token on /device/token/refresh', async () => {
        const device = await registerDevice(t.api);
        const customer = await signUp(t);
        const pair = await loginCustomer(t.api, customer.email, customer.password);

        expectProblem(await h.refresh(device.refreshToken), 401, 'INVALID_TOKEN');
        expectProblem(await refreshDevice(t.api, pair.refreshToken), 401, 'INVALID_TOKEN');
        expect((await h.refresh(pair.refreshToken)).response.status).toBe(200);
        expect((await refreshDevice(t.api, device.refreshToken)).response.status).toBe(200);
      });

      it('takes the role from the database: a customer token claiming role admin gets 403 on an admin route', async () => {
        const session = await aSession();

        const result = await t.api.POST('/api/v1/admin/devices/allowlist', {
          headers: customerAuth(craftToken(session, { payload: { role: 'admin' } })),
          body: { entries: [{ deviceId: 'gw-forged', hardwareId: 'hw-forged' }] },
        });

        expectProblem(result, 403, 'FORBIDDEN');
        expect((await t.db.query('SELECT * FROM registration_allowlist')).rows).toEqual([]);
      });
    });
  });

  describe('without SMTP_URL', () => {
    let t: TestApp;
    const h = helpersFor(() => t);

    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(async () => {
      await t?.close();
    });

    it('still signs customers up (the mail goes to the log) and lets them in', async () => {
      const body = aSignup();

      const { data, response } = await t.api.POST('/api/v1/auth/signup', { body });

      expect(response.status).toBe(201);
      // The mail job runs after the answer: it stores the link's token, then logs the mail.
      const userId = (await h.userRows(data!.email))[0].id;
      await eventually(async () => expect(await h.verificationTokens(userId)).toEqual([expect.objectContaining({ used_at: null })]));
      expect((await h.login(body.email, body.password)).response.status).toBe(200);
    });
  });

  describe('per-address sign-up limit (SIGNUP_MAX_PER_ADDRESS_PER_HOUR 3)', () => {
    let t: TestApp;
    const h = helpersFor(() => t);

    beforeAll(async () => {
      t = await createTestApp({ SIGNUP_MAX_PER_ADDRESS_PER_HOUR: '3', TRUST_PROXY: '127.0.0.1' });
    });
    afterAll(async () => {
      await t?.close();
    });

    const signupFrom = (address: string, body = aSignup()) => t.api.POST('/api/v1/auth/signup', { body, headers: { 'x-forwarded-for': address } });

    it('answers 429 RATE_LIMITED with Retry-After to the fourth sign-up from one address within the hour (taken addresses count too), storing nothing; other addresses go on', async () => {
      const first = aSignup();
      expect((await signupFrom('203.0.113.21', first)).response.status).toBe(201);
      expect((await signupFrom('203.0.113.21', first)).response.status).toBe(201);
      expect((await signupFrom('203.0.113.21')).response.status).toBe(201);
      const refused = aSignup();

      const limited = await signupFrom('203.0.113.21', refused);

      expectProblem(limited, 429, 'RATE_LIMITED');
      expectRetryAfter(limited.response, 3600);
      expect(await h.userRows(refused.email)).toEqual([]);
      expect((await signupFrom('203.0.113.22', refused)).response.status).toBe(201);
      expect(await h.userRows(refused.email)).toHaveLength(1);
    });

    it('does not count a refused password against the address', async () => {
      for (let attempt = 0; attempt < 5; attempt += 1) expectProblem(await signupFrom('203.0.113.31', aSignup({ password: 'password123' })), 400, 'PASSWORD_TOO_COMMON');

      expect((await signupFrom('203.0.113.31')).response.status).toBe(201);
    });
  });

  describe('per-account login failure limit (LOGIN_MAX_FAILURES_PER_DEVICE 3, keyed by e-mail address)', () => {
    let t: TestApp;
    const h = helpersFor(() => t);

    beforeAll(async () => {
      t = await createTestApp({
        LOGIN_MAX_FAILURES_PER_DEVICE: '3',
        LOGIN_MAX_FAILURES_PER_ADDRESS: '1000',
        LOGIN_FAILURE_WINDOW_SEC: String(LOGIN_FAILURE_WINDOW_SEC),
      });
    });
    afterAll(async () => {
      await t?.close();
    });

    const failLogins = async (emails: string[]) => {
      for (const email of emails) expectProblem(await h.login(email, 'wrong-password'), 401, 'INVALID_CREDENTIALS');
    };

    it('still lets the right password in after two failures', async () => {
      const customer = await signUp(t);
      await failLogins([customer.email, customer.email]);

      expect((await h.login(customer.email, customer.password)).response.status).toBe(200);
    });

    it('answers 429 RATE_LIMITED with Retry-After after three failures (in any case), even for the right password', async () => {
      const customer = await signUp(t);
      await failLogins([customer.email, customer.email.toUpperCase(), ` ${customer.email} `]);

      const limited = await h.login(customer.email, customer.password);

      expectProblem(limited, 429, 'RATE_LIMITED');
      expectRetryAfter(limited.response, LOGIN_FAILURE_WINDOW_SEC);
      expect(await h.refreshTokens(customer.userId)).toEqual([]);
    });

    it('limits an unknown address the same way, so the limit reveals no accounts', async () => {
      const unknown = anEmail();
      await failLogins([unknown, unknown, unknown]);

      expectProblem(await h.login(unknown, 'wrong-password'), 429, 'RATE_LIMITED');
    });

    it('does not block another account signing in from the same client address', async () => {
      const blocked = await signUp(t);
      const other = await signUp(t);
      await failLogins([blocked.email, blocked.email, blocked.email]);
      expectProblem(await h.login(blocked.email, blocked.password), 429, 'RATE_LIMITED');

      expect((await h.login(other.email, other.password)).response.status).toBe(200);
    });
  });

  describe('per-client-address failure limit (LOGIN_MAX_FAILURES_PER_ADDRESS 5)', () => {
    let t: TestApp;
    const h = helpersFor(() => t);

    beforeAll(async () => {
      t = await createTestApp({
        LOGIN_MAX_FAILURES_PER_DEVICE: '1000',
        LOGIN_MAX_FAILURES_PER_ADDRESS: '5',
        LOGIN_FAILURE_WINDOW_SEC: String(LOGIN_FAILURE_WINDOW_SEC),
      });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('answers 429 RATE_LIMITED to every login from an address that failed for many accounts', async () => {
      const customer = await signUp(t);
      for (let i = 0; i < 5; i++) expectProblem(await h.login(anEmail(), 'wrong-password'), 401, 'INVALID_CREDENTIALS');

      const limited = await h.login(customer.email, customer.password);

      expectProblem(limited, 429, 'RATE_LIMITED');
      expectRetryAfter(limited.response, LOGIN_FAILURE_WINDOW_SEC);
      expect(await h.refreshTokens(customer.userId)).toEqual([]);
    });
  });

  describe('per-client-address refresh failure limit (LOGIN_MAX_FAILURES_PER_ADDRESS 5)', () => {
    let t: TestApp;
    const h = helpersFor(() => t);

    beforeAll(async () => {
      t = await createTestApp({ LOGIN_MAX_FAILURES_PER_ADDRESS: '5', LOGIN_FAILURE_WINDOW_SEC: String(LOGIN_FAILURE_WINDOW_SEC) });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('answers 429 RATE_LIMITED to a valid refresh token after five unknown ones from the address', async () => {
      const customer = await signUp(t);
      const pair = await loginCustomer(t.api, customer.email, customer.password);
      for (let i = 0; i < 5; i++) expectProblem(await h.refresh(`ucr_${randomBytes(32).toString('base64url')}`), 401, 'INVALID_TOKEN');

      const limited = await h.refresh(pair.refreshToken);

      expectProblem(limited, 429, 'RATE_LIMITED');
      expectRetryAfter(limited.response, LOGIN_FAILURE_WINDOW_SEC);
      expect((await h.refreshTokens(customer.userId))[0].rotated_at).toBeNull();
    });
  });

  describe('administrator bootstrap (ADMIN_EMAIL, ADMIN_PASSWORD)', () => {
    const ADMIN_PASSWORD = 'admin-password-1';
    let t: TestApp;
    const h = helpersFor(() => t);

    beforeAll(async () => {
      t = await createTestApp({ ADMIN_EMAIL: 'Root@Example.com', ADMIN_PASSWORD });
    });
    afterAll(async () => {
      await t?.close();
    });

    const importAllowlist = (headers: Record<string, string>, deviceId = `gw-${randomBytes(4).toString('hex')}`) =>
      t.api.POST('/api/v1/admin/devices/allowlist', { headers, body: { entries: [{ deviceId, hardwareId: `hw-${deviceId}` }] } });

    it('creates one verified admin account with the normalised address and an argon2id hash', async () => {
      const rows = await h.userRows('root@example.com');

      expect(rows).toEqual([expect.objectContaining({ role: 'admin', email_verified_at: expect.any(Date), token_version: 1 })]);
      expect(rows[0].password_hash).toMatch(/^\$argon2id\$/);
      expect(rows[0].password_hash).not.toContain(ADMIN_PASSWORD);
      expect(await h.userCount()).toBe(1);
    });

    it('lets the administrator log in; GET /api/v1/users/me shows role admin, verified', async () => {
      const { accessToken } = await loginCustomer(t.api, 'Root@Example.com', ADMIN_PASSWORD);

      const { data } = await h.getMe(accessToken);

      expect(data).toEqual({ userId: (await h.userRows('root@example.com'))[0].id, email: 'root@example.com', emailVerified: true, role: 'admin', alertEmails: true });
    });

    it('keeps the address taken: a signup with it answers 201 like any other and the account stays admin, with its password', async () => {
      const { data, response } = await t.api.POST('/api/v1/auth/signup', { body: aSignup({ email: 'ROOT@example.com' }) });

      expect(response.status).toBe(201);
      expect(data).toEqual({ email: 'root@example.com' });
      expect(await h.userRows('root@example.com')).toEqual([expect.objectContaining({ role: 'admin' })]);
      expect((await h.login('root@example.com', ADMIN_PASSWORD)).response.status).toBe(200);
    });

    describe('POST /api/v1/admin/devices/allowlist', () => {
      it('answers 200 to the administrator and stores the entry', async () => {
        const { accessToken } = await loginCustomer(t.api, 'root@example.com', ADMIN_PASSWORD);
        const deviceId = `gw-${randomBytes(4).toString('hex')}`;

        const { data, response } = await importAllowlist(customerAuth(accessToken), deviceId);

        expect(response.status).toBe(200);
        expect(data).toEqual({ imported: 1 });
        const { rows } = await t.db.query('SELECT * FROM registration_allowlist WHERE device_id = $1', [deviceId]);
        expect(rows).toEqual([expect.objectContaining({ hardware_id: `hw-${deviceId}`, imported_by: (await h.userRows('root@example.com'))[0].id })]);
      });

      it('answers 403 FORBIDDEN to a customer, even a verified one, storing nothing', async () => {
        const customer = await aVerifiedCustomer(t);
        const deviceId = `gw-${randomBytes(4).toString('hex')}`;

        expectProblem(await importAllowlist(customerAuth(customer.accessToken), deviceId), 403, 'FORBIDDEN');

        expect((await t.db.query('SELECT * FROM registration_allowlist WHERE device_id = $1', [deviceId])).rows).toEqual([]);
      });

      it('answers 401 without a token and to a device token', async () => {
        const device = await registerDevice(t.api);

        expectProblem(await importAllowlist({}), 401, 'UNAUTHORIZED');
        expectProblem(await importAllowlist(bearer(device.accessToken)), 401, 'UNAUTHORIZED');
      });
    });
  });
});
