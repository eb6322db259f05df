import { RecordingAuditLog } from '../../../../test/fakes/audit/recording-audit-log.js';
import { SharingService } from '../../sharing/index.js';
import { InMemoryShareStore } from '../../../../test/fakes/sharing/in-memory-share-store.js';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { CustomerSessions } from './customer-sessions.js';
import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { JwtService } from '@nestjs/jwt';
import { loadEnv } from '../../../config/env.js';
import { InMemoryRefreshTokenStore } from '../../../../test/fakes/shared/in-memory-refresh-token-store.js';
import { InvalidRefreshTokenError } from '../../../shared/auth-tokens/refresh-tokens.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { RateLimitedError, UnauthorizedError } from '../../../shared/domain-error.js';
import { InMemoryFailureLimiter } from '../../../shared/rate-limit/failure-limiter.js';
import { TOKEN_ISSUER } from '../../devices/application/device-tokens.js';
import { AdministratorNotDeletableError, InvalidLoginError, InvalidPasswordResetTokenError, InvalidVerificationTokenError, WrongPasswordError } from '../domain/accounts.errors.js';
import { PasswordTooCommonError } from '../domain/password-policy.js';
import { User } from '../domain/user.js';
import { AccountsService } from './accounts.service.js';
import { CustomerPrincipal } from '../../../auth/principals.js';
import { InMemoryUserRepository } from '../../../../test/fakes/accounts/in-memory-user-repository.js';
import { Mailer, type Mail } from '../../../shared/mail/mailer.js';
import { PublicBaseUrl } from '../../../shared/mail/public-base-url.js';
import type { TransactionRunner } from '../domain/user.repository.js';
import { AccountErasure } from './account-erasure.js';
import { AccountMailOutbox, SendPasswordResetMail, SendSignupNotice, SendVerificationMail, type AccountMailJob } from './account-mails.js';
import { CUSTOMER_TOKEN_AUDIENCE, UserTokens, type CustomerTokenClaims } from './user-tokens.js';

class RecordingMailer extends Mailer {
  readonly sent: Mail[] = [];
  /** While set, every send fails with it and nothing is recorded. */
  failure: Error | null = null;

  async send(mail: Mail): Promise<void> {
    if (this.failure) throw this.failure;
    this.sent.push(mail);
  }

  /** The token of the reset link in the last mail to this address. */
  lastResetTokenTo(to: string): string {
    const mail = this.sent.filter((sent) => sent.to === to).at(-1);
    const match = mail?.text.match(/https:\/\/dash\.example\/reset-password\?token=(\S+)/);
    if (!match?.[1]) throw new Error(`no reset link was mailed to ${to}`);
    return decodeURIComponent(match[1]);
  }

  /** The token of the verification link in the last mail to this address. */
  lastTokenTo(to: string): string {
    const mail = this.sent.filter((sent) => sent.to === to).at(-1);
    const match = mail?.text.match(/https:\/\/dash\.example\/verify-email\?token=(\S+)/);
    if (!match?.[1]) throw new Error(`no verification link was mailed to ${to}`);
    return decodeURIComponent(match[1]);
  }
}

/**
 * The outbox as the job queue would work it, without the queue: each job runs as soon as it is
 * enqueued, unless `hold` is set; then it waits in `held` (a mail server that is down).
 */
class ImmediateAccountMails extends AccountMailOutbox {
  hold = false;
  readonly held: { queue: string; job: AccountMailJob; tx?: TransactionRunner }[] = [];

  constructor(
    private readonly verificationMail: SendVerificationMail,
    private readonly notice: SendSignupNotice,
    private readonly reset: SendPasswordResetMail,
  ) {
    super();
  }

  async passwordReset(email: string): Promise<void> {
    await this.reset.handle({ to: email });
  }

  async verification(user: User, tx?: TransactionRunner): Promise<void> {
    const job = { to: user.email, userId: user.id };
    if (this.hold) this.held.push({ queue: 'verification', job, tx });
    else await this.verificationMail.handle(job);
  }

  async signupNotice(owner: User): Promise<void> {
    const job = { to: owner.email, userId: owner.id };
    if (this.hold) this.held.push({ queue: 'notice', job });
    else await this.notice.handle(job);
  }

  /** Runs the held jobs, as the queue does once the mail server is back. */
  async release(): Promise<void> {
    this.hold = false;
    for (const { queue, job } of this.held.splice(0)) await (queue === 'verification' ? this.verificationMail.handle(job) : this.notice.handle(job));
  }
}

const START = new Date('2026-11-21T12:00:00.000Z');
const ADDRESS = '203.0.113.7';
const EMAIL = 'ada@example.com';
const PASSWORD = 'correct horse battery staple';
const VERIFICATION_TTL_SEC = 24 * 3600;

function setUp(envSource: Record<string, string> = {}) {
  const env = loadEnv({ PUBLIC_BASE_URL: 'https://dash.example', ...envSource });
  const clock = new FixedClock(START);
  const refreshTokens = new InMemoryRefreshTokenStore();
  const users = new InMemoryUserRepository(refreshTokens);
  const mailer = new RecordingMailer();
  const hasher = new SecretHasher('p'.repeat(32));
  const jwt = new JwtService({ secret: 'c'.repeat(32) });
  const limiter = new InMemoryFailureLimiter(() => clock.now().getTime());
  const tokens = new UserTokens(jwt, env, refreshTokens, hasher);
  const baseUrl = new PublicBaseUrl(env, new HttpAdapterHost());
  const outbox = new ImmediateAccountMails(new SendVerificationMail(users, hasher, mailer, clock, baseUrl), new SendSignupNotice(mailer), new SendPasswordResetMail(users, hasher, mailer, clock, baseUrl));
  const erasure = new AccountErasure();
  // Not connected, the feed is not live: every guard check reads the repository, as it must.
  const service = new AccountsService(users, tokens, outbox, hasher, limiter, clock, env, new CustomerSessions(users, new ChangeFeed('postgres://unused')), erasure, new SharingService(new InMemoryShareStore(), clock, new RecordingAuditLog()));
  const stored = async (userId: string) => {
    const user = await users.findById(userId);
    if (!user) throw new Error(`${userId} is not stored`);
    return user;
  };
  const verifyAccessToken = (token: string) =>
    jwt.verifyAsync<CustomerTokenClaims & { aud: string; iss: string; exp: number; iat: number }>(token, {
      audience: CUSTOMER_TOKEN_AUDIENCE,
      issuer: TOKEN_ISSUER,
      algorithms: ['HS256'],
      // Tokens are issued at the service clock's time.
      clockTimestamp: clock.now().getTime() / 1000,
    });
  /** Signs up from ADDRESS and returns the stored account (the answer names only the address). */
  const signUp = async (email: string, password: string) => {
    await service.signup(email, password, ADDRESS);
    const user = await users.findByEmail(User.normalizeEmail(email));
    if (!user) throw new Error(`${email} is not stored`);
    return user;
  };
  return { env, clock, users, mailer, outbox, hasher, refreshTokens, erasure, service, stored, verifyAccessToken, signUp };
}

describe('AccountsService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  describe('signup', () => {
    it('stores an unverified customer under the normalised e-mail with an argon2id hash of the password', async () => {
      const { hasher, stored, signUp } = setUp();

      const user = await signUp('  Ada@Example.COM ', PASSWORD);

      const saved = await stored(user.id);
      expect(saved.toState()).toMatchObject({ email: EMAIL, role: 'customer', emailVerifiedAt: null, tokenVersion: 1, createdAt: START });
      expect(saved.passwordHash).toMatch(/^\$argon2id\$/);
      expect(saved.passwordHash).not.toContain(PASSWORD);
      expect(await hasher.verifyLowEntropy(PASSWORD, saved.passwordHash)).toBe(true);
      expect(await hasher.verifyLowEntropy(`${PASSWORD}!`, saved.passwordHash)).toBe(false);
    });

    it('mails a verification link under PUBLIC_BASE_URL and stores only the HMAC of its token', async () => {
      const { mailer, users, hasher, signUp } = setUp();

      await signUp('Ada@Example.com', PASSWORD);

      expect(mailer.sent).toHaveLength(1);
      expect(mailer.sent[0]).toMatchObject({ to: EMAIL, subject: 'Confirm your e-mail address' });
      expect(mailer.sent[0]?.text).toMatch(/https:\/\/dash\.example\/verify-email\?token=[A-Za-z0-9_-]{43}(\s|$)/);
      const token = mailer.lastTokenTo(EMAIL);
      expect(users.verificationTokenHashes()).toEqual([hasher.hmac(token)]);
    });

    it('builds the link without a double slash when PUBLIC_BASE_URL ends with one', async () => {
      const { mailer, signUp } = setUp({ PUBLIC_BASE_URL: 'https://dash.example/' });

      await signUp(EMAIL, PASSWORD);

      expect(mailer.sent[0]?.text).toContain('https://dash.example/verify-email?token=');
    });

    it.each([EMAIL, 'ADA@EXAMPLE.COM', ' Ada@example.com '])('answers %j like a new address once it has an account: nothing stored, the owner told by mail', async (again) => {
      const { service, users, mailer, hasher, signUp } = setUp();
      const owner = await signUp(EMAIL, PASSWORD);

      await expect(service.signup(again, 'another password', ADDRESS)).resolves.toEqual({ email: EMAIL });

      expect(users.all()).toHaveLength(1);
      expect(await hasher.verifyLowEntropy(PASSWORD, (await users.findById(owner.id))!.passwordHash)).toBe(true);
      expect(mailer.sent.map((mail) => [mail.to, mail.subject])).toEqual([
        [EMAIL, 'Confirm your e-mail address'],
        [EMAIL, 'Someone tried to sign up with your e-mail address'],
      ]);
      expect(mailer.sent[1].text).not.toContain('another password');
    });

    it('tells the owner of a taken address at most once an hour', async () => {
      const { service, mailer, clock, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);

      for (let attempt = 0; attempt < 3; attempt += 1) await service.signup(EMAIL, 'another password', ADDRESS);
      clock.advanceSec(3600);
      await service.signup(EMAIL, 'another password', ADDRESS);

      expect(mailer.sent.filter((mail) => mail.subject.startsWith('Someone tried'))).toHaveLength(2);
    });

    it('refuses a common password with PASSWORD_TOO_COMMON before counting, hashing or storing anything', async () => {
      const { service, users, mailer } = setUp({ SIGNUP_MAX_PER_ADDRESS_PER_HOUR: '1' });

      await expect(service.signup(EMAIL, 'Password123', ADDRESS)).rejects.toMatchObject({ code: 'PASSWORD_TOO_COMMON', kind: 'invalid' });

      expect(users.all()).toEqual([]);
      expect(mailer.sent).toEqual([]);
      await expect(service.signup(EMAIL, PASSWORD, ADDRESS)).resolves.toEqual({ email: EMAIL });
    });

    it('limits sign-ups per client address, new and taken addresses alike, for an hour', async () => {
      const { service, users, clock } = setUp({ SIGNUP_MAX_PER_ADDRESS_PER_HOUR: '2' });
      await service.signup(EMAIL, PASSWORD, ADDRESS);
      await service.signup(EMAIL, PASSWORD, ADDRESS);

      const refused = service.signup('grace@example.com', PASSWORD, ADDRESS);

      await expect(refused).rejects.toBeInstanceOf(RateLimitedError);
      await expect(refused).rejects.toMatchObject({ details: { retryAfterSec: 3600 } });
      expect(users.all().map((user) => user.email)).toEqual([EMAIL]);
      await expect(service.signup('grace@example.com', PASSWORD, '198.51.100.9')).resolves.toEqual({ email: 'grace@example.com' });
      clock.advanceSec(3600);
      await expect(service.signup('alan@example.com', PASSWORD, ADDRESS)).resolves.toEqual({ email: 'alan@example.com' });
    });

    it('only enqueues the verification mail, inside the sign-up transaction, and the link works once it is sent', async () => {
      const { service, mailer, outbox, users, signUp } = setUp();
      outbox.hold = true;

      const user = await signUp(EMAIL, PASSWORD);

      expect(users.all()).toMatchObject([{ id: user.id, email: EMAIL, emailVerifiedAt: null }]);
      expect(mailer.sent).toEqual([]);
      expect(outbox.held).toEqual([{ queue: 'verification', job: { to: EMAIL, userId: user.id }, tx: expect.anything() }]);
      expect(users.verificationTokenHashes()).toEqual([]);
      await outbox.release();
      await expect(service.verifyEmail(mailer.lastTokenTo(EMAIL))).resolves.toMatchObject({ emailVerified: true });
    });

    it('creates no account when the mail job cannot be written', async () => {
      const { service, outbox, users } = setUp();
      outbox.verification = () => Promise.reject(new Error('queue unavailable'));

      await expect(service.signup(EMAIL, PASSWORD, ADDRESS)).rejects.toThrow('queue unavailable');
      expect(users.all()).toEqual([]);
    });

    it('sends no link for a job whose account was verified before it ran', async () => {
      const { service, mailer, outbox, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      outbox.hold = true;
      await service.resendVerification(user.id);
      await service.verifyEmail(mailer.lastTokenTo(EMAIL));

      await outbox.release();

      expect(mailer.sent).toHaveLength(1);
    });
  });

  describe('verifyEmail', () => {
    it('verifies the account with the mailed token, as of now', async () => {
      const { service, mailer, clock, stored, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      clock.advanceSec(60);

      const verified = await service.verifyEmail(mailer.lastTokenTo(EMAIL));

      expect(verified.id).toBe(user.id);
      expect(verified.emailVerified).toBe(true);
      expect((await stored(user.id)).toState().emailVerifiedAt).toEqual(clock.now());
    });

    it('refuses the same token a second time', async () => {
      const { service, mailer, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const token = mailer.lastTokenTo(EMAIL);
      await service.verifyEmail(token);

      await expect(service.verifyEmail(token)).rejects.toBeInstanceOf(InvalidVerificationTokenError);
      await expect(service.verifyEmail(token)).rejects.toMatchObject({ code: 'INVALID_TOKEN', kind: 'invalid' });
    });

    it('accepts a token a second before it expires', async () => {
      const { service, mailer, clock, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      clock.advanceSec(VERIFICATION_TTL_SEC - 1);

      await expect(service.verifyEmail(mailer.lastTokenTo(EMAIL))).resolves.toMatchObject({ emailVerified: true });
    });

    it('refuses a token older than 24 hours and leaves the account unverified', async () => {
      const { service, mailer, clock, stored, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      clock.advanceSec(VERIFICATION_TTL_SEC + 1);

      await expect(service.verifyEmail(mailer.lastTokenTo(EMAIL))).rejects.toBeInstanceOf(InvalidVerificationTokenError);
      expect((await stored(user.id)).emailVerified).toBe(false);
    });

    it('refuses an unknown token', async () => {
      const { service, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);

      await expect(service.verifyEmail('not-a-token')).rejects.toBeInstanceOf(InvalidVerificationTokenError);
    });
  });

  describe('resendVerification', () => {
    it('mails a new link whose token verifies the account', async () => {
      const { service, mailer, stored, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const first = mailer.lastTokenTo(EMAIL);

      await service.resendVerification(user.id);

      expect(mailer.sent).toHaveLength(2);
      const second = mailer.lastTokenTo(EMAIL);
      expect(second).not.toBe(first);
      await service.verifyEmail(second);
      expect((await stored(user.id)).emailVerified).toBe(true);
    });

    it('sends RESEND_VERIFICATION_MAX_PER_HOUR mails an hour, then is rate limited until the hour ends', async () => {
      const { service, mailer, env, clock, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      for (let i = 0; i < env.RESEND_VERIFICATION_MAX_PER_HOUR; i++) await service.resendVerification(user.id);
      expect(mailer.sent).toHaveLength(1 + env.RESEND_VERIFICATION_MAX_PER_HOUR);

      await expect(service.resendVerification(user.id)).rejects.toBeInstanceOf(RateLimitedError);
      await expect(service.resendVerification(user.id)).rejects.toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSec: 3600 } });
      expect(mailer.sent).toHaveLength(1 + env.RESEND_VERIFICATION_MAX_PER_HOUR);

      const other = await signUp('grace@example.com', PASSWORD);
      await expect(service.resendVerification(other.id)).resolves.toBeUndefined();

      clock.advanceSec(3600);
      await service.resendVerification(user.id);
      expect(mailer.sent.filter((mail) => mail.to === EMAIL)).toHaveLength(2 + env.RESEND_VERIFICATION_MAX_PER_HOUR);
    });

    it('sends nothing to a verified account', async () => {
      const { service, mailer, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      await service.verifyEmail(mailer.lastTokenTo(EMAIL));

      await service.resendVerification(user.id);

      expect(mailer.sent).toHaveLength(1);
    });
  });

  describe('login', () => {
    it('issues a customer token pair for the right password, whatever the case of the e-mail', async () => {
      const { service, verifyAccessToken, env, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);

      const tokens = await service.login(' ADA@example.com', PASSWORD, ADDRESS);

      expect(tokens).toMatchObject({ tokenType: 'Bearer', expiresIn: env.CUSTOMER_ACCESS_TOKEN_TTL_SEC });
      const claims = await verifyAccessToken(tokens.accessToken);
      expect(claims).toMatchObject({ sub: user.id, tv: 1, role: 'customer', aud: CUSTOMER_TOKEN_AUDIENCE, iss: TOKEN_ISSUER });
      expect(claims.exp - claims.iat).toBe(env.CUSTOMER_ACCESS_TOKEN_TTL_SEC);
      expect(tokens.refreshToken).toMatch(/^ucr_[A-Za-z0-9_-]{43}$/);
    });

    it('answers a wrong password and an unknown e-mail alike', async () => {
      const { service, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);

      const wrongPassword = await service.login(EMAIL, 'wrong password', ADDRESS).catch((error: unknown) => error);
      const unknownEmail = await service.login('nobody@example.com', PASSWORD, ADDRESS).catch((error: unknown) => error);

      expect(wrongPassword).toBeInstanceOf(InvalidLoginError);
      expect(unknownEmail).toBeInstanceOf(InvalidLoginError);
      expect(wrongPassword).toMatchObject({ code: 'INVALID_CREDENTIALS', kind: 'unauthorized' });
      expect(unknownEmail).toEqual(wrongPassword);
      expect((unknownEmail as InvalidLoginError).message).toBe((wrongPassword as InvalidLoginError).message);
    });

    it('blocks an e-mail after LOGIN_MAX_FAILURES_PER_DEVICE failures in any case, even with the right password, until the window ends', async () => {
      const { service, env, clock, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      await signUp('grace@example.com', PASSWORD);
      for (let i = 0; i < env.LOGIN_MAX_FAILURES_PER_DEVICE; i++) {
        const spelling = i % 2 === 0 ? EMAIL : EMAIL.toUpperCase();
        await expect(service.login(spelling, 'wrong password', `198.51.100.${i}`)).rejects.toBeInstanceOf(InvalidLoginError);
      }

      await expect(service.login(EMAIL, PASSWORD, ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
      await expect(service.login(EMAIL, PASSWORD, ADDRESS)).rejects.toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSec: env.LOGIN_FAILURE_WINDOW_SEC } });
      await expect(service.login('grace@example.com', PASSWORD, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });

      clock.advanceSec(env.LOGIN_FAILURE_WINDOW_SEC);
      await expect(service.login(EMAIL, PASSWORD, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('refresh', () => {
    it('rotates: the new pair works, the presented token is marked rotated', async () => {
      const { service, clock, refreshTokens, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const first = await service.login(EMAIL, PASSWORD, ADDRESS);
      clock.advanceSec(10);

      const second = await service.refresh(first.refreshToken, ADDRESS);

      expect(second.refreshToken).not.toBe(first.refreshToken);
      expect(second.refreshToken).toMatch(/^ucr_/);
      expect(await verifyAccessToken(second.accessToken)).toMatchObject({ sub: user.id, tv: 1 });
      expect(refreshTokens.of(user.id).map((token) => token.rotatedAt)).toEqual([clock.now(), null]);
      await expect(service.refresh(second.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('treats reuse of a rotated token after the grace as theft: bumps the token version and voids every token of the user', async () => {
      const { service, env, clock, stored, refreshTokens, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const first = await service.login(EMAIL, PASSWORD, ADDRESS);
      const second = await service.refresh(first.refreshToken, ADDRESS);
      const secondClaims = await verifyAccessToken(second.accessToken);
      clock.advanceSec(env.REFRESH_REUSE_GRACE_SEC + 1);

      await expect(service.refresh(first.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect((await stored(user.id)).tokenVersion).toBe(2);
      expect(refreshTokens.of(user.id).every((token) => token.revokedAt !== null)).toBe(true);
      await expect(service.refresh(second.refreshToken, ADDRESS)).rejects.toMatchObject({ code: 'INVALID_TOKEN' });
      await expect(service.authenticate(secondClaims)).rejects.toBeInstanceOf(UnauthorizedError);
      const fresh = await service.login(EMAIL, PASSWORD, ADDRESS);
      expect(await verifyAccessToken(fresh.accessToken)).toMatchObject({ tv: 2 });
      await expect(service.refresh(fresh.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('without a reuse grace, the same token presented twice at once: the request that rotated it gets no successor when the other voided everything meanwhile', async () => {
      const { service, stored, refreshTokens, signUp } = setUp({ REFRESH_REUSE_GRACE_SEC: '0' });
      const user = await signUp(EMAIL, PASSWORD);
      const first = await service.login(EMAIL, PASSWORD, ADDRESS);
      const rotate = refreshTokens.rotate.bind(refreshTokens);
      let concurrent: Promise<unknown> | undefined;
      // The second request arrives right after the first rotated the token (another instance, say).
      refreshTokens.rotate = async (id, successor, now) => {
        const rotated = await rotate(id, successor, now);
        concurrent ??= service.refresh(first.refreshToken, ADDRESS).catch((error: unknown) => error);
        await concurrent;
        return rotated;
      };

      await expect(service.refresh(first.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(await concurrent).toBeInstanceOf(InvalidRefreshTokenError);
      expect((await stored(user.id)).tokenVersion).toBe(2);
      // The successor was stored with the rotation, and voided with everything else.
      expect(refreshTokens.of(user.id).map((token) => token.revokedAt !== null)).toEqual([true, true]);
    });

    it('a repeat within the grace (the answer was lost) gets the same pair, byte for byte, in the same session', async () => {
      const { service, clock, refreshTokens, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const first = await service.login(EMAIL, PASSWORD, ADDRESS);
      clock.advanceSec(10);
      const second = await service.refresh(first.refreshToken, ADDRESS);
      clock.advanceSec(5);

      await expect(service.refresh(first.refreshToken, ADDRESS)).resolves.toEqual(second);

      const claims = await verifyAccessToken(second.accessToken);
      expect(claims).toMatchObject({ sid: (await verifyAccessToken(first.accessToken)).sid, iat: START.getTime() / 1000 + 10 });
      expect(refreshTokens.of(user.id)).toHaveLength(2);
      await expect(service.authenticate(claims)).resolves.toMatchObject({ userId: user.id });
      await expect(service.refresh(second.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('refuses an unknown token, and rate limits an address after LOGIN_MAX_FAILURES_PER_ADDRESS of them', async () => {
      const { service, env, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const { refreshToken } = await service.login(EMAIL, PASSWORD, ADDRESS);
      for (let i = 0; i < env.LOGIN_MAX_FAILURES_PER_ADDRESS; i++) {
        await expect(service.refresh(`ucr_guess-${i}`, '192.0.2.66')).rejects.toMatchObject({ name: 'InvalidRefreshTokenError', code: 'INVALID_TOKEN' });
      }

      await expect(service.refresh(refreshToken, '192.0.2.66')).rejects.toBeInstanceOf(RateLimitedError);
      await expect(service.refresh(refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('logout', () => {
    it('ends the session of the presented refresh token only: its refresh and access tokens', async () => {
      const { service, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const laptop = await service.login(EMAIL, PASSWORD, ADDRESS);
      const laptopRotated = await service.refresh(laptop.refreshToken, ADDRESS);
      const phone = await service.login(EMAIL, PASSWORD, ADDRESS);

      await service.logout(laptopRotated.refreshToken);

      await expect(service.refresh(laptopRotated.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(service.authenticate(await verifyAccessToken(laptop.accessToken))).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.authenticate(await verifyAccessToken(laptopRotated.accessToken))).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.authenticate(await verifyAccessToken(phone.accessToken))).resolves.toMatchObject({ role: 'customer' });
      await expect(service.refresh(phone.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('accepts an unknown or already revoked token', async () => {
      const { service, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const { refreshToken } = await service.login(EMAIL, PASSWORD, ADDRESS);
      await service.logout(refreshToken);

      await expect(service.logout(refreshToken)).resolves.toBeUndefined();
      await expect(service.logout('ucr_unknown')).resolves.toBeUndefined();
    });
  });

  describe('authenticate', () => {
    it('accepts the current token version in a live session', async () => {
      const { service, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const { sid } = await verifyAccessToken((await service.login(EMAIL, PASSWORD, ADDRESS)).accessToken);

      await expect(service.authenticate({ sub: user.id, tv: 1, sid })).resolves.toEqual(new CustomerPrincipal(user.id, 'customer', false, { sub: user.id, tv: 1, sid }));
    });

    it('refuses another token version, an account that does not exist, and a session that is unknown or another account\'s', async () => {
      const { service, users, stored, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const { sid } = await verifyAccessToken((await service.login(EMAIL, PASSWORD, ADDRESS)).accessToken);
      await signUp('grace@example.com', PASSWORD);
      const { sid: otherSid } = await verifyAccessToken((await service.login('grace@example.com', PASSWORD, ADDRESS)).accessToken);
      const revoked = await stored(user.id);
      revoked.revokeTokens();
      await users.save(revoked);

      await expect(service.authenticate({ sub: user.id, tv: 1, sid })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.authenticate({ sub: user.id, tv: 3, sid })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
      await expect(service.authenticate({ sub: '00000000-0000-4000-8000-000000000000', tv: 1, sid })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.authenticate({ sub: user.id, tv: 2, sid: '00000000-0000-4000-8000-000000000000' })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.authenticate({ sub: user.id, tv: 2, sid: otherSid })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.authenticate({ sub: user.id, tv: 2, sid })).resolves.toMatchObject({ userId: user.id });
    });

    it('reads the role and verification state from the account, not from the token', async () => {
      const { service, mailer, users, stored, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const claims = await verifyAccessToken((await service.login(EMAIL, PASSWORD, ADDRESS)).accessToken);
      expect(claims.role).toBe('customer');
      const session = { sub: claims.sub, tv: claims.tv, sid: claims.sid };
      await expect(service.authenticate(claims)).resolves.toEqual(new CustomerPrincipal(user.id, 'customer', false, session));

      await service.verifyEmail(mailer.lastTokenTo(EMAIL));
      await users.save(User.restore({ ...(await stored(user.id)).toState(), role: 'admin' }));

      const principal = await service.authenticate(claims);
      expect(principal).toEqual(new CustomerPrincipal(user.id, 'admin', true, session));
      expect(principal.isAdmin).toBe(true);
    });
  });

  describe('ensureAdmin', () => {
    it('creates a verified administrator who can log in', async () => {
      const { service, users, hasher, verifyAccessToken } = setUp();

      await service.ensureAdmin(' Root@Example.com ', 'admin password 1');

      const [admin] = users.all();
      expect(users.all()).toHaveLength(1);
      expect(admin).toMatchObject({ email: 'root@example.com', role: 'admin', emailVerifiedAt: START, tokenVersion: 1 });
      expect(admin?.passwordHash).toMatch(/^\$argon2id\$/);
      expect(await hasher.verifyLowEntropy('admin password 1', admin?.passwordHash)).toBe(true);
      const tokens = await service.login('root@example.com', 'admin password 1', ADDRESS);
      expect(await verifyAccessToken(tokens.accessToken)).toMatchObject({ sub: admin?.id, role: 'admin' });
    });

    it('leaves the administrator and its sessions alone on a restart with the same password', async () => {
      const { service, users, refreshTokens, verifyAccessToken } = setUp();
      await service.ensureAdmin(EMAIL, 'admin password 1');
      const before = users.all();
      const session = await service.login(EMAIL, 'admin password 1', ADDRESS);

      await service.ensureAdmin(EMAIL, 'admin password 1');

      expect(users.all()).toEqual(before);
      expect(refreshTokens.of(before[0]?.id ?? '').map((token) => token.revokedAt)).toEqual([null]);
      await expect(service.authenticate(await verifyAccessToken(session.accessToken))).resolves.toMatchObject({ role: 'admin' });
      await expect(service.refresh(session.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('makes an existing unverified customer with that e-mail the verified administrator, voiding its sessions', async () => {
      const { service, users, clock, stored, refreshTokens, verifyAccessToken, signUp } = setUp();
      const customer = await signUp(EMAIL, PASSWORD);
      const session = await service.login(EMAIL, PASSWORD, ADDRESS);
      const claims = await verifyAccessToken(session.accessToken);
      clock.advanceSec(60);

      await service.ensureAdmin('ADA@example.com', 'admin password 1');

      expect(users.all()).toHaveLength(1);
      expect((await stored(customer.id)).toState()).toMatchObject({
        id: customer.id,
        email: EMAIL,
        role: 'admin',
        emailVerifiedAt: clock.now(),
        createdAt: START,
        tokenVersion: 2,
      });
      expect(refreshTokens.of(customer.id).map((token) => token.revokedAt)).toEqual([clock.now()]);
      await expect(service.authenticate(claims)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.refresh(session.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(service.login(EMAIL, PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidLoginError);
      await expect(service.login(EMAIL, 'admin password 1', ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('keeps the first verification time of a verified customer', async () => {
      const { service, mailer, clock, stored, signUp } = setUp();
      const customer = await signUp(EMAIL, PASSWORD);
      clock.advanceSec(30);
      await service.verifyEmail(mailer.lastTokenTo(EMAIL));
      const verifiedAt = clock.now();
      clock.advanceSec(60);

      await service.ensureAdmin(EMAIL, 'admin password 1');

      expect((await stored(customer.id)).toState()).toMatchObject({ role: 'admin', emailVerifiedAt: verifiedAt });
    });

    it('sets a changed ADMIN_PASSWORD on the next start and voids the sessions of the old one', async () => {
      const { service, users } = setUp();
      await service.ensureAdmin(EMAIL, 'admin password 1');
      const session = await service.login(EMAIL, 'admin password 1', ADDRESS);

      await service.ensureAdmin(EMAIL, 'admin password 2');

      expect(users.all()).toMatchObject([{ role: 'admin', tokenVersion: 2 }]);
      await expect(service.refresh(session.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(service.login(EMAIL, 'admin password 1', ADDRESS)).rejects.toBeInstanceOf(InvalidLoginError);
      await expect(service.login(EMAIL, 'admin password 2', ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('password reset', () => {
    const NEW_PASSWORD = 'a brand new passphrase';

    it('mails a link under PUBLIC_BASE_URL to an account, stores only its HMAC, and mails nothing to an unknown address', async () => {
      const { service, mailer, users, hasher, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      mailer.sent.length = 0;

      await service.requestPasswordReset(' Ada@Example.com ', ADDRESS);
      await service.requestPasswordReset('nobody@example.com', ADDRESS);

      expect(mailer.sent.map((mail) => mail.to)).toEqual([EMAIL]);
      expect(mailer.sent[0]?.text).toMatch(/https:\/\/dash\.example\/reset-password\?token=[A-Za-z0-9_-]{43}(\s|$)/);
      expect(users.resetTokenHashes()).toEqual([hasher.hmac(mailer.lastResetTokenTo(EMAIL))]);
    });

    it('sets the new password, verifies the address and ends every session; the link works once', async () => {
      const { service, mailer, users, stored, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const session = await service.login(EMAIL, PASSWORD, ADDRESS);
      await service.requestPasswordReset(EMAIL, ADDRESS);
      const token = mailer.lastResetTokenTo(EMAIL);

      await service.resetPassword(token, NEW_PASSWORD, ADDRESS);

      expect((await stored(user.id)).toState()).toMatchObject({ tokenVersion: 2, emailVerifiedAt: START });
      await expect(service.refresh(session.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(service.login(EMAIL, PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidLoginError);
      await expect(service.login(EMAIL, NEW_PASSWORD, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
      await expect(service.resetPassword(token, 'yet another passphrase', ADDRESS)).rejects.toBeInstanceOf(InvalidPasswordResetTokenError);
      expect(users.resetTokenHashes()).toEqual([]);
    });

    it('accepts a link a second before the hour ends, and refuses it at the hour', async () => {
      const { service, mailer, clock, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      await service.requestPasswordReset(EMAIL, ADDRESS);
      const first = mailer.lastResetTokenTo(EMAIL);
      clock.advanceSec(3600);
      await expect(service.resetPassword(first, NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidPasswordResetTokenError);

      await service.requestPasswordReset(EMAIL, ADDRESS);
      clock.advanceSec(3599);
      await expect(service.resetPassword(mailer.lastResetTokenTo(EMAIL), NEW_PASSWORD, ADDRESS)).resolves.toBeUndefined();
    });

    it('voids the older link when a new one is asked for', async () => {
      const { service, mailer, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      await service.requestPasswordReset(EMAIL, ADDRESS);
      const older = mailer.lastResetTokenTo(EMAIL);
      await service.requestPasswordReset(EMAIL, ADDRESS);

      await expect(service.resetPassword(older, NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidPasswordResetTokenError);
      await expect(service.resetPassword(mailer.lastResetTokenTo(EMAIL), NEW_PASSWORD, ADDRESS)).resolves.toBeUndefined();
    });

    it('refuses a common password without using the link up, and without counting a failure', async () => {
      const { service, mailer, signUp } = setUp({ LOGIN_MAX_FAILURES_PER_ADDRESS: '1' });
      await signUp(EMAIL, PASSWORD);
      await service.requestPasswordReset(EMAIL, ADDRESS);
      const token = mailer.lastResetTokenTo(EMAIL);

      await expect(service.resetPassword(token, 'password123', ADDRESS)).rejects.toBeInstanceOf(PasswordTooCommonError);
      await expect(service.resetPassword(token, EMAIL, ADDRESS)).rejects.toBeInstanceOf(PasswordTooCommonError);

      await expect(service.resetPassword(token, NEW_PASSWORD, ADDRESS)).resolves.toBeUndefined();
    });

    it('counts unknown tokens against the client address, then refuses even a good one from that address', async () => {
      const { service, mailer, signUp } = setUp({ LOGIN_MAX_FAILURES_PER_ADDRESS: '2' });
      await signUp(EMAIL, PASSWORD);
      await service.requestPasswordReset(EMAIL, ADDRESS);
      const token = mailer.lastResetTokenTo(EMAIL);

      for (let i = 0; i < 2; i++) await expect(service.resetPassword(`guess-${i}`, NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidPasswordResetTokenError);

      await expect(service.resetPassword(token, NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
      await expect(service.resetPassword(token, NEW_PASSWORD, '198.51.100.1')).resolves.toBeUndefined();
    });

    it('limits requests per address asked for, known or not, and per client address', async () => {
      const { service, env, signUp } = setUp({ PASSWORD_RESET_MAX_PER_EMAIL_PER_HOUR: '2', PASSWORD_RESET_MAX_PER_ADDRESS_PER_HOUR: '5' });
      await signUp(EMAIL, PASSWORD);

      for (const email of [EMAIL, 'nobody@example.com']) {
        for (let i = 0; i < env.PASSWORD_RESET_MAX_PER_EMAIL_PER_HOUR; i++) await service.requestPasswordReset(email, `198.51.100.${i}`);
        await expect(service.requestPasswordReset(email, '198.51.100.99')).rejects.toBeInstanceOf(RateLimitedError);
      }
      for (let i = 0; i < 5; i++) await service.requestPasswordReset(`other-${i}@example.com`, ADDRESS);
      await expect(service.requestPasswordReset('one-more@example.com', ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
    });
  });

  describe('changePassword', () => {
    const NEW_PASSWORD = 'a brand new passphrase';
    const principalOf = async (service: AccountsService, verify: (token: string) => Promise<{ sub: string; tv: number; sid: string }>, accessToken: string) => {
      const claims = await verify(accessToken);
      return service.authenticate(claims);
    };

    it('sets the new password and ends every session but the caller’s', async () => {
      const { service, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const caller = await service.login(EMAIL, PASSWORD, ADDRESS);
      const other = await service.login(EMAIL, PASSWORD, ADDRESS);
      const customer = await principalOf(service, verifyAccessToken, caller.accessToken);

      await service.changePassword(customer, PASSWORD, NEW_PASSWORD, ADDRESS);

      await expect(principalOf(service, verifyAccessToken, caller.accessToken)).resolves.toBeInstanceOf(CustomerPrincipal);
      await expect(service.refresh(caller.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
      await expect(principalOf(service, verifyAccessToken, other.accessToken)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(service.refresh(other.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(service.login(EMAIL, NEW_PASSWORD, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('refuses a wrong current password and counts it as a failed login of the e-mail address', async () => {
      const { service, verifyAccessToken, signUp } = setUp({ LOGIN_MAX_FAILURES_PER_DEVICE: '2' });
      await signUp(EMAIL, PASSWORD);
      const customer = await principalOf(service, verifyAccessToken, (await service.login(EMAIL, PASSWORD, ADDRESS)).accessToken);

      for (let i = 0; i < 2; i++) await expect(service.changePassword(customer, 'not the password', NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(WrongPasswordError);

      await expect(service.login(EMAIL, PASSWORD, '198.51.100.1')).rejects.toBeInstanceOf(RateLimitedError);
    });

    it('refuses a common new password, naming newPassword', async () => {
      const { service, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const customer = await principalOf(service, verifyAccessToken, (await service.login(EMAIL, PASSWORD, ADDRESS)).accessToken);

      await expect(service.changePassword(customer, PASSWORD, 'password123', ADDRESS)).rejects.toMatchObject({ code: 'PASSWORD_TOO_COMMON', details: { errors: [{ field: 'newPassword' }] } });
    });
  });

  describe('deleteAccount', () => {
    it('runs the registered erasure steps, then deletes the account and its sessions', async () => {
      const { service, erasure, users, refreshTokens, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const session = await service.login(EMAIL, PASSWORD, ADDRESS);
      const customer = await service.authenticate(await verifyAccessToken(session.accessToken));
      const erased: { userId: string; clientAddress: string; at: Date; stillThere: boolean }[] = [];
      erasure.register('test', async (_tx, account) => {
        erased.push({ ...account, stillThere: (await users.findById(account.userId)) !== null });
      });

      await service.deleteAccount(customer, PASSWORD, ADDRESS);

      expect(erased).toEqual([{ userId: user.id, clientAddress: ADDRESS, at: START, stillThere: true }]);
      expect(users.all()).toEqual([]);
      expect(refreshTokens.of(user.id)).toEqual([]);
      await expect(service.login(EMAIL, PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidLoginError);
    });

    it('keeps the account when a step fails', async () => {
      const { service, erasure, users, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const customer = await service.authenticate(await verifyAccessToken((await service.login(EMAIL, PASSWORD, ADDRESS)).accessToken));
      erasure.register('failing', () => Promise.reject(new Error('step failed')));

      await expect(service.deleteAccount(customer, PASSWORD, ADDRESS)).rejects.toThrow('step failed');

      expect(users.all()).toHaveLength(1);
    });

    it('refuses a wrong password and an administrator, deleting nothing', async () => {
      const { service, users, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      await service.ensureAdmin('admin@example.com', 'admin password 1');
      const customer = await service.authenticate(await verifyAccessToken((await service.login(EMAIL, PASSWORD, ADDRESS)).accessToken));
      const admin = await service.authenticate(await verifyAccessToken((await service.login('admin@example.com', 'admin password 1', ADDRESS)).accessToken));

      await expect(service.deleteAccount(customer, 'not the password', ADDRESS)).rejects.toBeInstanceOf(WrongPasswordError);
      await expect(service.deleteAccount(admin, 'admin password 1', ADDRESS)).rejects.toBeInstanceOf(AdministratorNotDeletableError);

      expect(users.all()).toHaveLength(2);
    });
  });
});
