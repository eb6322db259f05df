import { Logger } from '@nestjs/common';
import { RateLimitedError } from '../../../shared/domain-error.js';
import { InvalidVerificationTokenError } from '../domain/accounts.errors.js';
import { ADDRESS, EMAIL, PASSWORD, START, setUpAccounts as setUp } from '../../../../test/support/account-services.js';

const VERIFICATION_TTL_SEC = 24 * 3600;

describe('AccountSignupService', () => {
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
      const { signups, users, mailer, hasher, signUp } = setUp();
      const owner = await signUp(EMAIL, PASSWORD);

      await expect(signups.signup(again, 'another password', ADDRESS)).resolves.toEqual({ email: EMAIL });

      expect(users.all()).toHaveLength(1);
      expect(await hasher.verifyLowEntropy(PASSWORD, (await users.findById(owner.id))!.passwordHash)).toBe(true);
      expect(mailer.sent.map((mail) => [mail.to, mail.subject])).toEqual([
        [EMAIL, 'Confirm your e-mail address'],
        [EMAIL, 'Someone tried to sign up with your e-mail address'],
      ]);
      expect(mailer.sent[1].text).not.toContain('another password');
    });

    it('tells the owner of a taken address at most once an hour', async () => {
      const { signups, mailer, clock, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);

      for (let attempt = 0; attempt < 3; attempt += 1) await signups.signup(EMAIL, 'another password', ADDRESS);
      clock.advanceSec(3600);
      await signups.signup(EMAIL, 'another password', ADDRESS);

      expect(mailer.sent.filter((mail) => mail.subject.startsWith('Someone tried'))).toHaveLength(2);
    });

    it('refuses a common password with PASSWORD_TOO_COMMON before counting, hashing or storing anything', async () => {
      const { signups, users, mailer } = setUp({ SIGNUP_MAX_PER_ADDRESS_PER_HOUR: '1' });

      await expect(signups.signup(EMAIL, 'Password123', ADDRESS)).rejects.toMatchObject({ code: 'PASSWORD_TOO_COMMON', kind: 'invalid' });

      expect(users.all()).toEqual([]);
      expect(mailer.sent).toEqual([]);
      await expect(signups.signup(EMAIL, PASSWORD, ADDRESS)).resolves.toEqual({ email: EMAIL });
    });

    it('limits sign-ups per client address, new and taken addresses alike, for an hour', async () => {
      const { signups, users, clock } = setUp({ SIGNUP_MAX_PER_ADDRESS_PER_HOUR: '2' });
      await signups.signup(EMAIL, PASSWORD, ADDRESS);
      await signups.signup(EMAIL, PASSWORD, ADDRESS);

      const refused = signups.signup('grace@example.com', PASSWORD, ADDRESS);

      await expect(refused).rejects.toBeInstanceOf(RateLimitedError);
      await expect(refused).rejects.toMatchObject({ details: { retryAfterSec: 3600 } });
      expect(users.all().map((user) => user.email)).toEqual([EMAIL]);
      await expect(signups.signup('grace@example.com', PASSWORD, '198.51.100.9')).resolves.toEqual({ email: 'grace@example.com' });
      clock.advanceSec(3600);
      await expect(signups.signup('alan@example.com', PASSWORD, ADDRESS)).resolves.toEqual({ email: 'alan@example.com' });
    });

    it('only enqueues the verification mail, inside the sign-up transaction, and the link works once it is sent', async () => {
      const { signups, mailer, outbox, users, signUp } = setUp();
      outbox.hold = true;

      const user = await signUp(EMAIL, PASSWORD);

      expect(users.all()).toMatchObject([{ id: user.id, email: EMAIL, emailVerifiedAt: null }]);
      expect(mailer.sent).toEqual([]);
      expect(outbox.held).toEqual([{ queue: 'verification', job: { to: EMAIL, userId: user.id }, tx: expect.anything() }]);
      expect(users.verificationTokenHashes()).toEqual([]);
      await outbox.release();
      await expect(signups.verifyEmail(mailer.lastTokenTo(EMAIL))).resolves.toMatchObject({ emailVerified: true });
    });

    it('creates no account when the mail job cannot be written', async () => {
      const { signups, outbox, users } = setUp();
      outbox.verification = () => Promise.reject(new Error('queue unavailable'));

      await expect(signups.signup(EMAIL, PASSWORD, ADDRESS)).rejects.toThrow('queue unavailable');
      expect(users.all()).toEqual([]);
    });

    it('sends no link for a job whose account was verified before it ran', async () => {
      const { signups, mailer, outbox, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      outbox.hold = true;
      await signups.resendVerification(user.id);
      await signups.verifyEmail(mailer.lastTokenTo(EMAIL));

      await outbox.release();

      expect(mailer.sent).toHaveLength(1);
    });
  });

  describe('verifyEmail', () => {
    it('verifies the account with the mailed token, as of now', async () => {
      const { signups, mailer, clock, stored, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      clock.advanceSec(60);

      const verified = await signups.verifyEmail(mailer.lastTokenTo(EMAIL));

      expect(verified.id).toBe(user.id);
      expect(verified.emailVerified).toBe(true);
      expect((await stored(user.id)).toState().emailVerifiedAt).toEqual(clock.now());
    });

    it('refuses the same token a second time', async () => {
      const { signups, mailer, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const token = mailer.lastTokenTo(EMAIL);
      await signups.verifyEmail(token);

      await expect(signups.verifyEmail(token)).rejects.toBeInstanceOf(InvalidVerificationTokenError);
      await expect(signups.verifyEmail(token)).rejects.toMatchObject({ code: 'INVALID_TOKEN', kind: 'invalid' });
    });

    it('accepts a token a second before it expires', async () => {
      const { signups, mailer, clock, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      clock.advanceSec(VERIFICATION_TTL_SEC - 1);

      await expect(signups.verifyEmail(mailer.lastTokenTo(EMAIL))).resolves.toMatchObject({ emailVerified: true });
    });

    it('refuses a token older than 24 hours and leaves the account unverified', async () => {
      const { signups, mailer, clock, stored, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      clock.advanceSec(VERIFICATION_TTL_SEC + 1);

      await expect(signups.verifyEmail(mailer.lastTokenTo(EMAIL))).rejects.toBeInstanceOf(InvalidVerificationTokenError);
      expect((await stored(user.id)).emailVerified).toBe(false);
    });

    it('refuses an unknown token', async () => {
      const { signups, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);

      await expect(signups.verifyEmail('not-a-token')).rejects.toBeInstanceOf(InvalidVerificationTokenError);
    });
  });

  describe('resendVerification', () => {
    it('mails a new link whose token verifies the account', async () => {
      const { signups, mailer, stored, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const first = mailer.lastTokenTo(EMAIL);

      await signups.resendVerification(user.id);

      expect(mailer.sent).toHaveLength(2);
      const second = mailer.lastTokenTo(EMAIL);
      expect(second).not.toBe(first);
      await signups.verifyEmail(second);
      expect((await stored(user.id)).emailVerified).toBe(true);
    });

    it('sends RESEND_VERIFICATION_MAX_PER_HOUR mails an hour, then is rate limited until the hour ends', async () => {
      const { signups, mailer, env, clock, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      for (let i = 0; i < env.RESEND_VERIFICATION_MAX_PER_HOUR; i++) await signups.resendVerification(user.id);
      expect(mailer.sent).toHaveLength(1 + env.RESEND_VERIFICATION_MAX_PER_HOUR);

      await expect(signups.resendVerification(user.id)).rejects.toBeInstanceOf(RateLimitedError);
      await expect(signups.resendVerification(user.id)).rejects.toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSec: 3600 } });
      expect(mailer.sent).toHaveLength(1 + env.RESEND_VERIFICATION_MAX_PER_HOUR);

      const other = await signUp('grace@example.com', PASSWORD);
      await expect(signups.resendVerification(other.id)).resolves.toBeUndefined();

      clock.advanceSec(3600);
      await signups.resendVerification(user.id);
      expect(mailer.sent.filter((mail) => mail.to === EMAIL)).toHaveLength(2 + env.RESEND_VERIFICATION_MAX_PER_HOUR);
    });

    it('sends nothing to a verified account', async () => {
      const { signups, mailer, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      await signups.verifyEmail(mailer.lastTokenTo(EMAIL));

      await signups.resendVerification(user.id);

      expect(mailer.sent).toHaveLength(1);
    });
  });
});
