import { Logger } from '@nestjs/common';
import { CustomerPrincipal } from '../../../auth/principals.js';
import { InvalidRefreshTokenError } from '../../../shared/auth-tokens/refresh-tokens.js';
import { RateLimitedError, UnauthorizedError } from '../../../shared/domain-error.js';
import { TOKEN_ISSUER } from '../../devices/application/device-tokens.js';
import { InvalidLoginError } from '../domain/accounts.errors.js';
import { User } from '../domain/user.js';
import { CUSTOMER_TOKEN_AUDIENCE } from './user-tokens.js';
import { ADDRESS, EMAIL, PASSWORD, START, setUpAccounts as setUp } from '../../../../test/support/account-services.js';

describe('AccountSessionsService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  describe('login', () => {
    it('issues a customer token pair for the right password, whatever the case of the e-mail', async () => {
      const { sessions, verifyAccessToken, env, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);

      const tokens = await sessions.login(' ADA@example.com', PASSWORD, ADDRESS);

      expect(tokens).toMatchObject({ tokenType: 'Bearer', expiresIn: env.CUSTOMER_ACCESS_TOKEN_TTL_SEC });
      const claims = await verifyAccessToken(tokens.accessToken);
      expect(claims).toMatchObject({ sub: user.id, tv: 1, role: 'customer', aud: CUSTOMER_TOKEN_AUDIENCE, iss: TOKEN_ISSUER });
      expect(claims.exp - claims.iat).toBe(env.CUSTOMER_ACCESS_TOKEN_TTL_SEC);
      expect(tokens.refreshToken).toMatch(/^ucr_[A-Za-z0-9_-]{43}$/);
    });

    it('answers a wrong password and an unknown e-mail alike', async () => {
      const { sessions, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);

      const wrongPassword = await sessions.login(EMAIL, 'wrong password', ADDRESS).catch((error: unknown) => error);
      const unknownEmail = await sessions.login('nobody@example.com', PASSWORD, ADDRESS).catch((error: unknown) => error);

      expect(wrongPassword).toBeInstanceOf(InvalidLoginError);
      expect(unknownEmail).toBeInstanceOf(InvalidLoginError);
      expect(wrongPassword).toMatchObject({ code: 'INVALID_CREDENTIALS', kind: 'unauthorized' });
      expect(unknownEmail).toEqual(wrongPassword);
      expect((unknownEmail as InvalidLoginError).message).toBe((wrongPassword as InvalidLoginError).message);
    });

    it('blocks an e-mail after LOGIN_MAX_FAILURES_PER_DEVICE failures in any case, even with the right password, until the window ends', async () => {
      const { sessions, env, clock, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      await signUp('grace@example.com', PASSWORD);
      for (let i = 0; i < env.LOGIN_MAX_FAILURES_PER_DEVICE; i++) {
        const spelling = i % 2 === 0 ? EMAIL : EMAIL.toUpperCase();
        await expect(sessions.login(spelling, 'wrong password', `198.51.100.${i}`)).rejects.toBeInstanceOf(InvalidLoginError);
      }

      await expect(sessions.login(EMAIL, PASSWORD, ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
      await expect(sessions.login(EMAIL, PASSWORD, ADDRESS)).rejects.toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSec: env.LOGIN_FAILURE_WINDOW_SEC } });
      await expect(sessions.login('grace@example.com', PASSWORD, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });

      clock.advanceSec(env.LOGIN_FAILURE_WINDOW_SEC);
      await expect(sessions.login(EMAIL, PASSWORD, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('refresh', () => {
    it('rotates: the new pair works, the presented token is marked rotated', async () => {
      const { sessions, clock, refreshTokens, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const first = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      clock.advanceSec(10);

      const second = await sessions.refresh(first.refreshToken, ADDRESS);

      expect(second.refreshToken).not.toBe(first.refreshToken);
      expect(second.refreshToken).toMatch(/^ucr_/);
      expect(await verifyAccessToken(second.accessToken)).toMatchObject({ sub: user.id, tv: 1 });
      expect(refreshTokens.of(user.id).map((token) => token.rotatedAt)).toEqual([clock.now(), null]);
      await expect(sessions.refresh(second.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('treats reuse of a rotated token after the grace as theft: bumps the token version and voids every token of the user', async () => {
      const { sessions, env, clock, stored, refreshTokens, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const first = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      const second = await sessions.refresh(first.refreshToken, ADDRESS);
      const secondClaims = await verifyAccessToken(second.accessToken);
      clock.advanceSec(env.REFRESH_REUSE_GRACE_SEC + 1);

      await expect(sessions.refresh(first.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect((await stored(user.id)).tokenVersion).toBe(2);
      expect(refreshTokens.of(user.id).every((token) => token.revokedAt !== null)).toBe(true);
      await expect(sessions.refresh(second.refreshToken, ADDRESS)).rejects.toMatchObject({ code: 'INVALID_TOKEN' });
      await expect(sessions.authenticate(secondClaims)).rejects.toBeInstanceOf(UnauthorizedError);
      const fresh = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      expect(await verifyAccessToken(fresh.accessToken)).toMatchObject({ tv: 2 });
      await expect(sessions.refresh(fresh.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('without a reuse grace, the same token presented twice at once: the request that rotated it gets no successor when the other voided everything meanwhile', async () => {
      const { sessions, stored, refreshTokens, signUp } = setUp({ REFRESH_REUSE_GRACE_SEC: '0' });
      const user = await signUp(EMAIL, PASSWORD);
      const first = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      const rotate = refreshTokens.rotate.bind(refreshTokens);
      let concurrent: Promise<unknown> | undefined;
      // The second request arrives right after the first rotated the token (another instance, say).
      refreshTokens.rotate = async (id, successor, now) => {
        const rotated = await rotate(id, successor, now);
        concurrent ??= sessions.refresh(first.refreshToken, ADDRESS).catch((error: unknown) => error);
        await concurrent;
        return rotated;
      };

      await expect(sessions.refresh(first.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(await concurrent).toBeInstanceOf(InvalidRefreshTokenError);
      expect((await stored(user.id)).tokenVersion).toBe(2);
      // The successor was stored with the rotation, and voided with everything else.
      expect(refreshTokens.of(user.id).map((token) => token.revokedAt !== null)).toEqual([true, true]);
    });

    it('a repeat within the grace (the answer was lost) gets the same pair, byte for byte, in the same session', async () => {
      const { sessions, clock, refreshTokens, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const first = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      clock.advanceSec(10);
      const second = await sessions.refresh(first.refreshToken, ADDRESS);
      clock.advanceSec(5);

      await expect(sessions.refresh(first.refreshToken, ADDRESS)).resolves.toEqual(second);

      const claims = await verifyAccessToken(second.accessToken);
      expect(claims).toMatchObject({ sid: (await verifyAccessToken(first.accessToken)).sid, iat: START.getTime() / 1000 + 10 });
      expect(refreshTokens.of(user.id)).toHaveLength(2);
      await expect(sessions.authenticate(claims)).resolves.toMatchObject({ userId: user.id });
      await expect(sessions.refresh(second.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('refuses an unknown token, and rate limits an address after LOGIN_MAX_FAILURES_PER_ADDRESS of them', async () => {
      const { sessions, env, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const { refreshToken } = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      for (let i = 0; i < env.LOGIN_MAX_FAILURES_PER_ADDRESS; i++) {
        await expect(sessions.refresh(`ucr_guess-${i}`, '192.0.2.66')).rejects.toMatchObject({ name: 'InvalidRefreshTokenError', code: 'INVALID_TOKEN' });
      }

      await expect(sessions.refresh(refreshToken, '192.0.2.66')).rejects.toBeInstanceOf(RateLimitedError);
      await expect(sessions.refresh(refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('logout', () => {
    it('ends the session of the presented refresh token only: its refresh and access tokens', async () => {
      const { sessions, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const laptop = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      const laptopRotated = await sessions.refresh(laptop.refreshToken, ADDRESS);
      const phone = await sessions.login(EMAIL, PASSWORD, ADDRESS);

      await sessions.logout(laptopRotated.refreshToken);

      await expect(sessions.refresh(laptopRotated.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(sessions.authenticate(await verifyAccessToken(laptop.accessToken))).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(sessions.authenticate(await verifyAccessToken(laptopRotated.accessToken))).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(sessions.authenticate(await verifyAccessToken(phone.accessToken))).resolves.toMatchObject({ role: 'customer' });
      await expect(sessions.refresh(phone.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('accepts an unknown or already revoked token', async () => {
      const { sessions, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const { refreshToken } = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      await sessions.logout(refreshToken);

      await expect(sessions.logout(refreshToken)).resolves.toBeUndefined();
      await expect(sessions.logout('ucr_unknown')).resolves.toBeUndefined();
    });
  });

  describe('authenticate', () => {
    it('accepts the current token version in a live session', async () => {
      const { sessions, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const { sid } = await verifyAccessToken((await sessions.login(EMAIL, PASSWORD, ADDRESS)).accessToken);

      await expect(sessions.authenticate({ sub: user.id, tv: 1, sid })).resolves.toEqual(new CustomerPrincipal(user.id, 'customer', false, { sub: user.id, tv: 1, sid }));
    });

    it('refuses another token version, an account that does not exist, and a session that is unknown or another account\'s', async () => {
      const { sessions, users, stored, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const { sid } = await verifyAccessToken((await sessions.login(EMAIL, PASSWORD, ADDRESS)).accessToken);
      await signUp('grace@example.com', PASSWORD);
      const { sid: otherSid } = await verifyAccessToken((await sessions.login('grace@example.com', PASSWORD, ADDRESS)).accessToken);
      const revoked = await stored(user.id);
      revoked.revokeTokens();
      await users.save(revoked);

      await expect(sessions.authenticate({ sub: user.id, tv: 1, sid })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(sessions.authenticate({ sub: user.id, tv: 3, sid })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
      await expect(sessions.authenticate({ sub: '00000000-0000-4000-8000-000000000000', tv: 1, sid })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(sessions.authenticate({ sub: user.id, tv: 2, sid: '00000000-0000-4000-8000-000000000000' })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(sessions.authenticate({ sub: user.id, tv: 2, sid: otherSid })).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(sessions.authenticate({ sub: user.id, tv: 2, sid })).resolves.toMatchObject({ userId: user.id });
    });

    it('reads the role and verification state from the account, not from the token', async () => {
      const { signups, sessions, mailer, users, stored, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const claims = await verifyAccessToken((await sessions.login(EMAIL, PASSWORD, ADDRESS)).accessToken);
      expect(claims.role).toBe('customer');
      const session = { sub: claims.sub, tv: claims.tv, sid: claims.sid };
      await expect(sessions.authenticate(claims)).resolves.toEqual(new CustomerPrincipal(user.id, 'customer', false, session));

      await signups.verifyEmail(mailer.lastTokenTo(EMAIL));
      await users.save(User.restore({ ...(await stored(user.id)).toState(), role: 'admin' }));

      const principal = await sessions.authenticate(claims);
      expect(principal).toEqual(new CustomerPrincipal(user.id, 'admin', true, session));
      expect(principal.isAdmin).toBe(true);
    });
  });
});
