import { Logger } from '@nestjs/common';
import { CustomerPrincipal } from '../../../auth/principals.js';
import { InvalidRefreshTokenError } from '../../../shared/auth-tokens/refresh-tokens.js';
import { RateLimitedError, UnauthorizedError } from '../../../shared/domain-error.js';
import { InvalidLoginError, InvalidPasswordResetTokenError, WrongPasswordError } from '../domain/accounts.errors.js';
import { PasswordTooCommonError } from '../domain/password-policy.js';
import type { AccountSessionsService } from './account-sessions.service.js';
import { ADDRESS, EMAIL, PASSWORD, START, setUpAccounts as setUp } from '../../../../test/support/account-services.js';

describe('AccountPasswordService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  describe('password reset', () => {
    const NEW_PASSWORD = 'a brand new passphrase';

    it('mails a link under PUBLIC_BASE_URL to an account, stores only its HMAC, and mails nothing to an unknown address', async () => {
      const { passwords, mailer, users, hasher, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      mailer.sent.length = 0;

      await passwords.requestPasswordReset(' Ada@Example.com ', ADDRESS);
      await passwords.requestPasswordReset('nobody@example.com', ADDRESS);

      expect(mailer.sent.map((mail) => mail.to)).toEqual([EMAIL]);
      expect(mailer.sent[0]?.text).toMatch(/https:\/\/dash\.example\/reset-password\?token=[A-Za-z0-9_-]{43}(\s|$)/);
      expect(users.resetTokenHashes()).toEqual([hasher.hmac(mailer.lastResetTokenTo(EMAIL))]);
    });

    it('sets the new password, verifies the address and ends every session; the link works once', async () => {
      const { sessions, passwords, mailer, users, stored, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const session = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      await passwords.requestPasswordReset(EMAIL, ADDRESS);
      const token = mailer.lastResetTokenTo(EMAIL);

      await passwords.resetPassword(token, NEW_PASSWORD, ADDRESS);

      expect((await stored(user.id)).toState()).toMatchObject({ tokenVersion: 2, emailVerifiedAt: START });
      await expect(sessions.refresh(session.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(sessions.login(EMAIL, PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidLoginError);
      await expect(sessions.login(EMAIL, NEW_PASSWORD, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
      await expect(passwords.resetPassword(token, 'yet another passphrase', ADDRESS)).rejects.toBeInstanceOf(InvalidPasswordResetTokenError);
      expect(users.resetTokenHashes()).toEqual([]);
    });

    it('accepts a link a second before the hour ends, and refuses it at the hour', async () => {
      const { passwords, mailer, clock, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      await passwords.requestPasswordReset(EMAIL, ADDRESS);
      const first = mailer.lastResetTokenTo(EMAIL);
      clock.advanceSec(3600);
      await expect(passwords.resetPassword(first, NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidPasswordResetTokenError);

      await passwords.requestPasswordReset(EMAIL, ADDRESS);
      clock.advanceSec(3599);
      await expect(passwords.resetPassword(mailer.lastResetTokenTo(EMAIL), NEW_PASSWORD, ADDRESS)).resolves.toBeUndefined();
    });

    it('voids the older link when a new one is asked for', async () => {
      const { passwords, mailer, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      await passwords.requestPasswordReset(EMAIL, ADDRESS);
      const older = mailer.lastResetTokenTo(EMAIL);
      await passwords.requestPasswordReset(EMAIL, ADDRESS);

      await expect(passwords.resetPassword(older, NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidPasswordResetTokenError);
      await expect(passwords.resetPassword(mailer.lastResetTokenTo(EMAIL), NEW_PASSWORD, ADDRESS)).resolves.toBeUndefined();
    });

    it('refuses a common password without using the link up, and without counting a failure', async () => {
      const { passwords, mailer, signUp } = setUp({ LOGIN_MAX_FAILURES_PER_ADDRESS: '1' });
      await signUp(EMAIL, PASSWORD);
      await passwords.requestPasswordReset(EMAIL, ADDRESS);
      const token = mailer.lastResetTokenTo(EMAIL);

      await expect(passwords.resetPassword(token, 'password123', ADDRESS)).rejects.toBeInstanceOf(PasswordTooCommonError);
      await expect(passwords.resetPassword(token, EMAIL, ADDRESS)).rejects.toBeInstanceOf(PasswordTooCommonError);

      await expect(passwords.resetPassword(token, NEW_PASSWORD, ADDRESS)).resolves.toBeUndefined();
    });

    it('counts unknown tokens against the client address, then refuses even a good one from that address', async () => {
      const { passwords, mailer, signUp } = setUp({ LOGIN_MAX_FAILURES_PER_ADDRESS: '2' });
      await signUp(EMAIL, PASSWORD);
      await passwords.requestPasswordReset(EMAIL, ADDRESS);
      const token = mailer.lastResetTokenTo(EMAIL);

      for (let i = 0; i < 2; i++) await expect(passwords.resetPassword(`guess-${i}`, NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidPasswordResetTokenError);

      await expect(passwords.resetPassword(token, NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
      await expect(passwords.resetPassword(token, NEW_PASSWORD, '198.51.100.1')).resolves.toBeUndefined();
    });

    it('limits requests per address asked for, known or not, and per client address', async () => {
      const { passwords, env, signUp } = setUp({ PASSWORD_RESET_MAX_PER_EMAIL_PER_HOUR: '2', PASSWORD_RESET_MAX_PER_ADDRESS_PER_HOUR: '5' });
      await signUp(EMAIL, PASSWORD);

      for (const email of [EMAIL, 'nobody@example.com']) {
        for (let i = 0; i < env.PASSWORD_RESET_MAX_PER_EMAIL_PER_HOUR; i++) await passwords.requestPasswordReset(email, `198.51.100.${i}`);
        await expect(passwords.requestPasswordReset(email, '198.51.100.99')).rejects.toBeInstanceOf(RateLimitedError);
      }
      for (let i = 0; i < 5; i++) await passwords.requestPasswordReset(`other-${i}@example.com`, ADDRESS);
      await expect(passwords.requestPasswordReset('one-more@example.com', ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
    });
  });

  describe('changePassword', () => {
    const NEW_PASSWORD = 'a brand new passphrase';
    const principalOf = async (sessions: AccountSessionsService, verify: (token: string) => Promise<{ sub: string; tv: number; sid: string }>, accessToken: string) => {
      const claims = await verify(accessToken);
      return sessions.authenticate(claims);
    };

    it('sets the new password and ends every session but the caller’s', async () => {
      const { sessions, passwords, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const caller = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      const other = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      const customer = await principalOf(sessions, verifyAccessToken, caller.accessToken);

      await passwords.changePassword(customer, PASSWORD, NEW_PASSWORD, ADDRESS);

      await expect(principalOf(sessions, verifyAccessToken, caller.accessToken)).resolves.toBeInstanceOf(CustomerPrincipal);
      await expect(sessions.refresh(caller.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
      await expect(principalOf(sessions, verifyAccessToken, other.accessToken)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(sessions.refresh(other.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(sessions.login(EMAIL, NEW_PASSWORD, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('refuses a wrong current password and counts it as a failed login of the e-mail address', async () => {
      const { sessions, passwords, verifyAccessToken, signUp } = setUp({ LOGIN_MAX_FAILURES_PER_DEVICE: '2' });
      await signUp(EMAIL, PASSWORD);
      const customer = await principalOf(sessions, verifyAccessToken, (await sessions.login(EMAIL, PASSWORD, ADDRESS)).accessToken);

      for (let i = 0; i < 2; i++) await expect(passwords.changePassword(customer, 'not the password', NEW_PASSWORD, ADDRESS)).rejects.toBeInstanceOf(WrongPasswordError);

      await expect(sessions.login(EMAIL, PASSWORD, '198.51.100.1')).rejects.toBeInstanceOf(RateLimitedError);
    });

    it('refuses a common new password, naming newPassword', async () => {
      const { sessions, passwords, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const customer = await principalOf(sessions, verifyAccessToken, (await sessions.login(EMAIL, PASSWORD, ADDRESS)).accessToken);

      await expect(passwords.changePassword(customer, PASSWORD, 'password123', ADDRESS)).rejects.toMatchObject({ code: 'PASSWORD_TOO_COMMON', details: { errors: [{ field: 'newPassword' }] } });
    });
  });
});
