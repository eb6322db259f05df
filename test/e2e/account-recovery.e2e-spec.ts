import { createHmac, randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { bearer } from '../support/builders.js';
import { aClaimedDevice, ADMIN_PASSWORD, ADMIN_SETTINGS, anAdmin, claim, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aSignup, customerAuth, loginCustomer, signUp, userIdOf, type Customer, type TokenPair } from '../support/customers.js';
import { eventually } from '../support/eventually.js';
import { jobsSettled } from '../support/jobs.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from '../support/smtp-sink.js';
import { ingestAll, telemetryRows } from '../support/telemetry.js';

const PUBLIC_BASE_URL = 'https://dash.example';
const MAIL_FROM = 'Device Cloud Test <accounts@dash.example>';
const RESET_SUBJECT = 'Reset your Device Cloud password';
const LOGIN_MAX_FAILURES_PER_EMAIL = 3;
const LOGIN_MAX_FAILURES_PER_ADDRESS = 5;
/** Timed rounds of reset requests, each of PER_ROUND requests for an account's address and as many for an unknown one. */
const ROUNDS = 31;
const PER_ROUND = 10;
const RESETS_PER_EMAIL = PER_ROUND;
const RESETS_PER_ADDRESS = 5;

/** A client address of its own for each use (documentation ranges), forwarded by the trusted proxy 127.0.0.1. */
let addressSerial = 0;
function anAddress(): string {
  addressSerial += 1;
  return `198.51.${100 + Math.floor(addressSerial / 250)}.${1 + (addressSerial % 250)}`;
}
const from = (address: string) => ({ 'x-forwarded-for': address });

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

describe('account recovery, password change and account deletion', () => {
  let t: TestApp;
  let sink: SmtpSink;
  const handedOut = new Set<ReceivedMail>();

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({
      ...ADMIN_SETTINGS,
      SMTP_URL: sink.url,
      MAIL_FROM,
      PUBLIC_BASE_URL,
      TRUST_PROXY: '127.0.0.1',
      PASSWORD_RESET_MAX_PER_EMAIL_PER_HOUR: String(RESETS_PER_EMAIL),
      PASSWORD_RESET_MAX_PER_ADDRESS_PER_HOUR: String(RESETS_PER_ADDRESS),
      LOGIN_MAX_FAILURES_PER_DEVICE: String(LOGIN_MAX_FAILURES_PER_EMAIL),
      LOGIN_MAX_FAILURES_PER_ADDRESS: String(LOGIN_MAX_FAILURES_PER_ADDRESS),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      JOB_POLL_INTERVAL_MS: '500',
    });
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const hmac = (value: string) => createHmac('sha256', t.secrets.pepper).update(value, 'utf8').digest('hex');
  const requestReset = (email: string, address = anAddress()) => t.api.POST('/api/v1/auth/password-reset', { body: { email }, headers: from(address) });
  const confirmReset = (token: string, password: string, address = anAddress()) =>
    t.api.POST('/api/v1/auth/password-reset/confirm', { body: { token, password }, headers: from(address) });
  const login = (email: string, password: string, address = anAddress()) => t.api.POST('/api/v1/auth/login', { body: { email, password }, headers: from(address) });
  const refresh = (refreshToken: string) => t.api.POST('/api/v1/auth/refresh', { body: { refreshToken }, headers: from(anAddress()) });
  const getMe = (accessToken: string) => t.api.GET('/api/v1/users/me', { headers: customerAuth(accessToken) });
  const changePassword = (accessToken: string, currentPassword: string, newPassword: string, address = anAddress()) =>
    t.api.POST('/api/v1/users/me/password', { body: { currentPassword, newPassword }, headers: { ...customerAuth(accessToken), ...from(address) } });
  const deleteMe = (accessToken: string, password: string, address = anAddress()) =>
    t.api.DELETE('/api/v1/users/me', { body: { password }, headers: { ...customerAuth(accessToken), ...from(address) } });

  const userRow = async (userId: string) =>
    (await t.db.query<{ password_hash: string; email_verified_at: Date | null; token_version: number }>('SELECT * FROM users WHERE id = $1', [userId])).rows[0];
  const resetTokenRows = async (userId: string) =>
    (await t.db.query<{ token_hash: string; expires_at: Date }>('SELECT token_hash, expires_at FROM password_reset_tokens WHERE user_id = $1', [userId])).rows;
  const resetJobCount = async () => (await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'mail.password-reset'")).rows[0].n;

  /** The next reset mail to `email` that no earlier call returned (the verification mail of the sign-up is not one). */
  async function nextResetMail(email: string): Promise<ReceivedMail> {
    return eventually(() => {
      const mail = sink.messagesTo(email).find((message) => message.subject === RESET_SUBJECT && !handedOut.has(message));
      if (!mail) throw new Error(`no new reset mail to ${email}`);
      handedOut.add(mail);
      return mail;
    });
  }

  /** Follows the mail's link as a browser would receive it: the token is the link's `token` parameter. */
  function tokenOfLink(mail: ReceivedMail): string {
    const link = /https:\/\/\S+/.exec(mail.text)?.[0];
    if (!link) throw new Error(`no link in: ${mail.text}`);
    const url = new URL(link);
    expect(`${url.origin}${url.pathname}`).toBe(`${PUBLIC_BASE_URL}/reset-password`);
    const token = url.searchParams.get('token');
    if (!token) throw new Error(`no token in ${link}`);
    return token;
  }

  /** Asks for a link to the customer's address and returns the token of the mail that arrives. */
  async function aResetToken(email: string): Promise<string> {
    expect((await requestReset(email)).response.status).toBe(202);
    return tokenOfLink(await nextResetMail(email));
  }

  /** A signed-up (unverified) customer with two sessions. */
  async function aCustomerWithTwoSessions(): Promise<Customer & { first: TokenPair; second: TokenPair }> {
    const customer = await signUp(t);
    return { ...customer, first: await loginCustomer(t.api, customer.email, customer.password), second: await loginCustomer(t.api, customer.email, customer.password) };
  }

  /** A verified, signed-in customer in the claim fixtures' shape, with its password. */
  async function aVerifiedOwner(): Promise<SignedIn & { password: string }> {
    const customer = await signUp(t);
    await t.db.query('UPDATE users SET email_verified_at = now() WHERE id = $1', [customer.userId]);
    const session = await loginCustomer(t.api, customer.email, customer.password);
    return { userId: customer.userId, email: customer.email, password: customer.password, accessToken: session.accessToken, headers: bearer(session.accessToken) };
  }

  describe('password reset', () => {
    it('over SMTP: the link in the mail sets a new password, verifies the address and ends every session', async () => {
      const customer = await aCustomerWithTwoSessions();
      const newPassword = `new-${randomBytes(8).toString('hex')}`;

      const requested = await requestReset(customer.email.toUpperCase());
      expect(requested.response.status).toBe(202);
      expect(requested.data).toBeUndefined();

      const mail = await nextResetMail(customer.email);
      expect(mail.to).toEqual([customer.email]);
      expect(mail.from).toBe(MAIL_FROM);
      expect(mail.text).toMatch(new RegExp(`${PUBLIC_BASE_URL.replaceAll('.', '\\.')}/reset-password\\?token=[A-Za-z0-9_-]{43}(\\s|$)`));
      const token = tokenOfLink(mail);
      const [stored] = await resetTokenRows(customer.userId);
      expect(stored.token_hash).toBe(hmac(token));
      expect(Math.abs(stored.expires_at.getTime() - (Date.now() + 3600_000))).toBeLessThan(60_000);
      const before = await userRow(customer.userId);

      const { data, response } = await confirmReset(token, newPassword);

      expect(response.status).toBe(200);
      expect(data).toEqual({ passwordChanged: true });
      const after = await userRow(customer.userId);
      expect(after.password_hash).toMatch(/^\$argon2id\$/);
      expect(after.password_hash).not.toBe(before.password_hash);
      expect(after.email_verified_at).toBeInstanceOf(Date);
      for (const session of [customer.first, customer.second]) {
        expectProblem(await getMe(session.accessToken), 401, 'UNAUTHORIZED');
        expectProblem(await refresh(session.refreshToken), 401, 'INVALID_TOKEN');
      }
      expectProblem(await login(customer.email, customer.password), 401, 'INVALID_CREDENTIALS');
      const fresh = await login(customer.email, newPassword);
      expect(fresh.response.status).toBe(200);
      expect((await getMe(fresh.data!.accessToken)).data).toMatchObject({ userId: customer.userId, emailVerified: true });
      expect(await resetTokenRows(customer.userId)).toEqual([]);
    });

    it('answers an address without an account with the same status, body and time (median of 31 rounds within 20 %)', async () => {
      const timed = async (email: string) => {
        const started = performance.now();
        // A client address of its own each time, so the per-address limit does the same work for both.
        const { data, error, response } = await requestReset(email);
        const ms = performance.now() - started;
        return { ms, answer: { status: response.status, contentType: response.headers.get('content-type'), contentLength: response.headers.get('content-length'), data, error } };
      };
      /**
       * An account's address and an unknown one, PER_ROUND requests each, alternating, back to back:
       * under the same load from whatever else the machine runs, and the fastest of each kind, which
       * that load can only slow down. The mail jobs of a round are due a second after its requests
       * and may run during a later round: more of that load, borne by both kinds alike.
       */
      const accounts: string[] = [];
      for (let i = 0; i <= ROUNDS; i++) accounts.push((await signUp(t)).email);
      const aRound = async (firstIsAccount: boolean) => {
        const account = accounts.pop()!;
        const unknown = `nobody-${randomBytes(4).toString('hex')}@example.com`;
        const results = { account, unknown, accountMs: [] as number[], unknownMs: [] as number[], answers: [] as Record<string, unknown>[] };
        for (let i = 0; i < 2 * PER_ROUND; i++) {
          const isAccount = (i % 2 === 0) === firstIsAccount;
          const { ms, answer } = await timed(isAccount ? account : unknown);
          (isAccount ? results.accountMs : results.unknownMs).push(ms);
          results.answers.push(answer);
        }
        return results;
      };
      // Warm-up: the first requests of a route compile code paths either would pay for.
      await aRound(true);

      const rounds: Awaited<ReturnType<typeof aRound>>[] = [];
      for (let i = 0; i < ROUNDS; i++) rounds.push(await aRound(i % 2 === 0));

      const answers = rounds.flatMap((round) => round.answers);
      expect(answers[0]).toMatchObject({ status: 202, data: undefined, error: undefined });
      expect(answers).toEqual(answers.map(() => answers[0]));
      const fastest = (round: (typeof rounds)[number]) => ({ account: Math.min(...round.accountMs), unknown: Math.min(...round.unknownMs) });
      const ratio = median(rounds.map((round) => fastest(round).account / fastest(round).unknown));
      const ms = (values: number[]) => values.map((value) => value.toFixed(1)).join(' ');
      process.stdout.write(
        `password reset timing, fastest per round, ms: account ${ms(rounds.map((round) => fastest(round).account))}; unknown ${ms(rounds.map((round) => fastest(round).unknown))}; median ratio ${ratio.toFixed(3)}\n`,
      );
      expect(ratio).toBeGreaterThan(1 / 1.2);
      expect(ratio).toBeLessThan(1.2);
      // Each account got its mails; no unknown address got any.
      await jobsSettled(t.db, 30_000);
      for (const round of rounds) {
        const mails = sink.messagesTo(round.account).filter((mail) => mail.subject === RESET_SUBJECT);
        expect(mails).toHaveLength(PER_ROUND);
        mails.forEach((mail) => handedOut.add(mail));
        expect(sink.messagesTo(round.unknown)).toEqual([]);
      }
    }, 150_000);

    it('makes a link single-use: the same token again is 400 INVALID_TOKEN and changes nothing', async () => {
      const customer = await signUp(t);
      const token = await aResetToken(customer.email);
      expect((await confirmReset(token, 'first new password')).response.status).toBe(200);
      const after = await userRow(customer.userId);

      expectProblem(await confirmReset(token, 'second new password'), 400, 'INVALID_TOKEN');

      expect(await userRow(customer.userId)).toEqual(after);
      expect((await login(customer.email, 'first new password')).response.status).toBe(200);
    });

    it('voids the earlier link when a new one is asked for', async () => {
      const customer = await signUp(t);
      const older = await aResetToken(customer.email);
      const newer = await aResetToken(customer.email);

      expectProblem(await confirmReset(older, 'older new password'), 400, 'INVALID_TOKEN');
      expect((await confirmReset(newer, 'newer new password')).response.status).toBe(200);
      expect((await login(customer.email, 'newer new password')).response.status).toBe(200);
    });

    it('refuses a link after its hour: 400 INVALID_TOKEN, the password unchanged', async () => {
      const customer = await signUp(t);
      const token = await aResetToken(customer.email);
      const before = await userRow(customer.userId);
      await t.db.query("UPDATE password_reset_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1", [customer.userId]);

      expectProblem(await confirmReset(token, 'too late password'), 400, 'INVALID_TOKEN');

      expect(await userRow(customer.userId)).toEqual(before);
      expect((await login(customer.email, customer.password)).response.status).toBe(200);
    });

    it('refuses a password the sign-up policy refuses, and leaves the link usable', async () => {
      const customer = await signUp(t);
      const token = await aResetToken(customer.email);
      const before = await userRow(customer.userId);

      const common = expectProblem(await confirmReset(token, 'password123'), 400, 'PASSWORD_TOO_COMMON');
      expect(fieldsOf(common)).toEqual(['password']);
      expect(fieldsOf(expectProblem(await confirmReset(token, 'short'), 400, 'VALIDATION_FAILED'))).toEqual(['password']);

      expect(await userRow(customer.userId)).toEqual(before);
      expect(await resetTokenRows(customer.userId)).toHaveLength(1);
      expect((await confirmReset(token, 'a good new password')).response.status).toBe(200);
    });

    it('counts unknown tokens against the client address: after LOGIN_MAX_FAILURES_PER_ADDRESS, 429 even for a good one', async () => {
      const customer = await signUp(t);
      const token = await aResetToken(customer.email);
      const address = anAddress();

      for (let i = 0; i < LOGIN_MAX_FAILURES_PER_ADDRESS; i++) expectProblem(await confirmReset(randomBytes(32).toString('base64url'), 'a good new password', address), 400, 'INVALID_TOKEN');
      const limited = await confirmReset(token, 'a good new password', address);

      expectProblem(limited, 429, 'RATE_LIMITED');
      expect(Number(limited.response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await resetTokenRows(customer.userId)).toHaveLength(1);
      expect((await confirmReset(token, 'a good new password', anAddress())).response.status).toBe(200);
    });

    it('limits requests per address asked for, known and unknown alike, and per client address', async () => {
      const customer = await signUp(t);
      const unknown = `nobody-${randomBytes(4).toString('hex')}@example.com`;
      for (const email of [customer.email, unknown]) {
        for (let i = 0; i < RESETS_PER_EMAIL; i++) expect((await requestReset(email)).response.status).toBe(202);
        const limited = await requestReset(email);
        expectProblem(limited, 429, 'RATE_LIMITED');
        expect(Number(limited.response.headers.get('retry-after'))).toBeGreaterThan(3000);
      }

      const address = anAddress();
      for (let i = 0; i < RESETS_PER_ADDRESS; i++) expect((await requestReset(`someone-${i}-${randomBytes(3).toString('hex')}@example.com`, address)).response.status).toBe(202);
      expectProblem(await requestReset(customer.email.replace('@', '+x@'), address), 429, 'RATE_LIMITED');
      // The account's mails go out before the next test waits for one of its own.
      await jobsSettled(t.db, 60_000);
    }, 120_000);
  });

  describe('POST /api/v1/users/me/password', () => {
    it('sets the new password and ends every other session; the caller stays signed in', async () => {
      const customer = await aCustomerWithTwoSessions();
      const before = await userRow(customer.userId);

      const { response } = await changePassword(customer.first.accessToken, customer.password, 'my changed password');

      expect(response.status).toBe(204);
      expect((await userRow(customer.userId)).password_hash).not.toBe(before.password_hash);
      expect((await getMe(customer.first.accessToken)).response.status).toBe(200);
      expect((await refresh(customer.first.refreshToken)).response.status).toBe(200);
      expectProblem(await getMe(customer.second.accessToken), 401, 'UNAUTHORIZED');
      expectProblem(await refresh(customer.second.refreshToken), 401, 'INVALID_TOKEN');
      expectProblem(await login(customer.email, customer.password), 401, 'INVALID_CREDENTIALS');
      expect((await login(customer.email, 'my changed password')).response.status).toBe(200);
    });

    it('voids a reset link asked for before the change', async () => {
      const customer = await aCustomerWithTwoSessions();
      const token = await aResetToken(customer.email);

      expect((await changePassword(customer.first.accessToken, customer.password, 'my changed password')).response.status).toBe(204);

      expectProblem(await confirmReset(token, 'a reset password'), 400, 'INVALID_TOKEN');
    });

    it('refuses a wrong current password with 403 INVALID_CREDENTIALS, changes nothing, and counts it as a failed login', async () => {
      const customer = await aCustomerWithTwoSessions();
      const before = await userRow(customer.userId);

      for (let i = 0; i < LOGIN_MAX_FAILURES_PER_EMAIL; i++) expectProblem(await changePassword(customer.first.accessToken, 'not my password', 'my changed password'), 403, 'INVALID_CREDENTIALS');

      expect(await userRow(customer.userId)).toEqual(before);
      expect((await getMe(customer.second.accessToken)).response.status).toBe(200);
      // The e-mail's login limit is full: even the right password waits, from any address.
      expectProblem(await login(customer.email, customer.password), 429, 'RATE_LIMITED');
      expectProblem(await changePassword(customer.first.accessToken, customer.password, 'my changed password'), 429, 'RATE_LIMITED');
    });

    it('refuses a new password the sign-up policy refuses, naming newPassword', async () => {
      const customer = await aCustomerWithTwoSessions();
      const before = await userRow(customer.userId);

      expect(fieldsOf(expectProblem(await changePassword(customer.first.accessToken, customer.password, 'password123'), 400, 'PASSWORD_TOO_COMMON'))).toEqual(['newPassword']);
      expect(fieldsOf(expectProblem(await changePassword(customer.first.accessToken, customer.password, 'short'), 400, 'VALIDATION_FAILED'))).toEqual(['newPassword']);

      expect(await userRow(customer.userId)).toEqual(before);
      expect((await getMe(customer.second.accessToken)).response.status).toBe(200);
    });
  });

  describe('DELETE /api/v1/users/me', () => {
    it("releases the account's devices (claimable again, telemetry kept), erases the account and its sessions, webhooks, shares and API keys", async () => {
      const owner = await aVerifiedOwner();
      const other = await loginCustomer(t.api, owner.email, owner.password);
      const gateways = [await aClaimedDevice(t, owner), await aClaimedDevice(t, owner)];
      const now = Date.now();
      await ingestAll(t.api, gateways[0].registered.accessToken, [0, 1, 2].map((i) => ({ ts: new Date(now - (3 - i) * 60_000).toISOString(), metrics: { soc: 50 + i } })));
      const telemetryBefore = await telemetryRows(t.db, gateways[0].body.deviceId);
      expect(telemetryBefore).toHaveLength(3);
      expect((await t.api.POST('/api/v1/user/webhooks', { body: { url: 'http://127.0.0.1:9/hook' }, headers: owner.headers })).response.status).toBe(201);
      // A share the account granted, and one it holds on someone else's device.
      const friend = await aVerifiedOwner();
      const friendsGateway = await aClaimedDevice(t, friend);
      expect((await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: gateways[0].body.deviceId } }, body: { email: friend.email, role: 'viewer' }, headers: owner.headers })).response.status).toBe(201);
      expect((await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: friendsGateway.body.deviceId } }, body: { email: owner.email, role: 'installer' }, headers: friend.headers })).response.status).toBe(201);
      expect((await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: friendsGateway.body.deviceId } }, headers: owner.headers })).response.status).toBe(200);
      const apiKey = await t.api.POST('/api/v1/user/api-keys', { body: { name: 'script', scope: 'read' }, headers: owner.headers });
      expect(apiKey.response.status).toBe(201);
      expect((await t.api.GET('/api/v1/dashboard/devices', { headers: bearer(apiKey.data!.key) })).response.status).toBe(200);
      const address = anAddress();

      const { response } = await deleteMe(owner.accessToken, owner.password, address);

      expect(response.status).toBe(204);
      expect(await userRow(owner.userId)).toBeUndefined();
      for (const table of ['user_refresh_tokens', 'email_verification_tokens', 'password_reset_tokens', 'webhooks', 'pending_notifications', 'stream_tickets', 'api_keys']) {
        expect({ table, rows: (await t.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE user_id = $1`, [owner.userId])).rows[0].n }).toEqual({ table, rows: 0 });
      }
      expect((await t.db.query('SELECT count(*)::int AS n FROM users WHERE email = $1', [owner.email])).rows[0].n).toBe(0);
      expect((await t.db.query('SELECT count(*)::int AS n FROM device_shares WHERE granted_by = $1 OR user_id = $1 OR email = $2', [owner.userId, owner.email])).rows[0].n).toBe(0);
      expect((await t.api.GET('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: friendsGateway.body.deviceId } }, headers: friend.headers })).data!.items).toEqual([]);
      for (const { body } of gateways) {
        expect(await ownedDeviceRow(t.db, body.deviceId)).toMatchObject({ owner_id: null, claimed_at: null, last_released_at: expect.any(Date) });
        const events = await t.db.query<{ type: string; owner_id: string; data: object }>('SELECT type, owner_id, data FROM device_events WHERE device_id = $1 ORDER BY id', [body.deviceId]);
        expect(events.rows.filter((event) => event.type === 'device.released')).toEqual([{ type: 'device.released', owner_id: owner.userId, data: {} }]);
        const audit = await t.db.query('SELECT user_id, action, outcome, client_address FROM claim_audit WHERE device_id = $1 AND action = $2', [body.deviceId, 'release']);
        expect(audit.rows).toEqual([{ user_id: owner.userId, action: 'release', outcome: 'RELEASED', client_address: address }]);
      }
      expect(await telemetryRows(t.db, gateways[0].body.deviceId)).toEqual(telemetryBefore);
      for (const accessToken of [owner.accessToken, other.accessToken]) expectProblem(await getMe(accessToken), 401, 'UNAUTHORIZED');
      expectProblem(await t.api.GET('/api/v1/dashboard/devices', { headers: bearer(apiKey.data!.key) }), 401, 'UNAUTHORIZED');
      expectProblem(await refresh(other.refreshToken), 401, 'INVALID_TOKEN');
      expectProblem(await login(owner.email, owner.password), 401, 'INVALID_CREDENTIALS');

      const next = await aVerifiedOwner();
      for (const { body } of gateways) {
        const claimed = await claim(t, next, { deviceId: body.deviceId, claimCode: body.claimCode });
        expect(claimed.response.status).toBe(200);
        expect(claimed.data).toMatchObject({ deviceId: body.deviceId, ownerId: next.userId });
      }
      // The address is free again.
      expect((await t.api.POST('/api/v1/auth/signup', { body: aSignup({ email: owner.email }) })).response.status).toBe(201);
      expect(await userIdOf(t, owner.email)).not.toBe(owner.userId);
    });

    it('refuses a wrong password with 403 INVALID_CREDENTIALS and keeps everything', async () => {
      const owner = await aVerifiedOwner();
      const gateway = await aClaimedDevice(t, owner);
      const before = await userRow(owner.userId);

      expectProblem(await deleteMe(owner.accessToken, 'not my password'), 403, 'INVALID_CREDENTIALS');

      expect(await userRow(owner.userId)).toEqual(before);
      expect(await ownedDeviceRow(t.db, gateway.body.deviceId)).toMatchObject({ owner_id: owner.userId });
      expect((await getMe(owner.accessToken)).response.status).toBe(200);
    });

    it('refuses the administrator (403 FORBIDDEN): its account comes from ADMIN_EMAIL', async () => {
      const admin = await anAdmin(t);

      expectProblem(await deleteMe(admin.accessToken, ADMIN_PASSWORD), 403, 'FORBIDDEN');

      expect(await userRow(admin.userId)).toBeDefined();
      expect((await getMe(admin.accessToken)).response.status).toBe(200);
    });
  });

  describe('bad input: a 400 problem that changes nothing', () => {
    it('POST /api/v1/auth/password-reset: no job is enqueued', async () => {
      await jobsSettled(t.db);
      const jobs = await resetJobCount();

      for (const body of [{}, { email: 'not-an-e-mail' }, { email: 42 }, { email: `${'a'.repeat(250)}@example.com` }]) {
        const result = await t.api.POST('/api/v1/auth/password-reset', { body: body as { email: string }, headers: from(anAddress()) });
        expect([...new Set(fieldsOf(expectProblem(result, 400, 'VALIDATION_FAILED')))]).toEqual(['email']);
      }

      expect(await resetJobCount()).toBe(jobs);
    });

    it('POST /api/v1/auth/password-reset/confirm: the link stays, the password too', async () => {
      const customer = await signUp(t);
      const token = await aResetToken(customer.email);
      const before = await userRow(customer.userId);

      for (const body of [{}, { token }, { password: 'a good new password' }, { token: '', password: 'a good new password' }, { token, password: 'x'.repeat(129) }, { token: 7, password: 'a good new password' }]) {
        expectProblem(await t.api.POST('/api/v1/auth/password-reset/confirm', { body: body as { token: string; password: string }, headers: from(anAddress()) }), 400, 'VALIDATION_FAILED');
      }

      expect(await userRow(customer.userId)).toEqual(before);
      expect(await resetTokenRows(customer.userId)).toHaveLength(1);
    });

    it('POST /api/v1/users/me/password and DELETE /api/v1/users/me: the account and its sessions stay', async () => {
      const customer = await aCustomerWithTwoSessions();
      const before = await userRow(customer.userId);
      const headers = { ...customerAuth(customer.first.accessToken), ...from(anAddress()) };

      for (const body of [{}, { currentPassword: customer.password }, { newPassword: 'a good new password' }, { currentPassword: '', newPassword: 'a good new password' }, { currentPassword: customer.password, newPassword: null }]) {
        expectProblem(await t.api.POST('/api/v1/users/me/password', { body: body as { currentPassword: string; newPassword: string }, headers }), 400, 'VALIDATION_FAILED');
      }
      for (const body of [{}, { password: '' }, { password: ['x'] }]) {
        expectProblem(await t.api.DELETE('/api/v1/users/me', { body: body as { password: string }, headers }), 400, 'VALIDATION_FAILED');
      }

      expect(await userRow(customer.userId)).toEqual(before);
      expect((await getMe(customer.second.accessToken)).response.status).toBe(200);
    });

    it('without a token, the account routes answer 401 and change nothing', async () => {
      const customer = await aCustomerWithTwoSessions();
      const before = await userRow(customer.userId);

      expectProblem(await t.api.POST('/api/v1/users/me/password', { body: { currentPassword: customer.password, newPassword: 'a good new password' } }), 401, 'UNAUTHORIZED');
      expectProblem(await t.api.DELETE('/api/v1/users/me', { body: { password: customer.password } }), 401, 'UNAUTHORIZED');

      expect(await userRow(customer.userId)).toEqual(before);
    });
  });
});
