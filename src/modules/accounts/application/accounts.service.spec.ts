import { Logger } from '@nestjs/common';
import { InvalidRefreshTokenError } from '../../../shared/auth-tokens/refresh-tokens.js';
import { UnauthorizedError } from '../../../shared/domain-error.js';
import { AdministratorNotDeletableError, InvalidLoginError, WrongPasswordError } from '../domain/accounts.errors.js';
import { ADDRESS, EMAIL, PASSWORD, START, setUpAccounts as setUp } from '../../../../test/support/account-services.js';

describe('AccountsService', () => {
  beforeAll(() => Logger.overrideLogger(false));

  describe('ensureAdmin', () => {
    it('creates a verified administrator who can log in', async () => {
      const { sessions, accounts, users, hasher, verifyAccessToken } = setUp();

      await accounts.ensureAdmin(' Root@Example.com ', 'admin password 1');

      const [admin] = users.all();
      expect(users.all()).toHaveLength(1);
      expect(admin).toMatchObject({ email: 'root@example.com', role: 'admin', emailVerifiedAt: START, tokenVersion: 1 });
      expect(admin?.passwordHash).toMatch(/^\$argon2id\$/);
      expect(await hasher.verifyLowEntropy('admin password 1', admin?.passwordHash)).toBe(true);
      const tokens = await sessions.login('root@example.com', 'admin password 1', ADDRESS);
      expect(await verifyAccessToken(tokens.accessToken)).toMatchObject({ sub: admin?.id, role: 'admin' });
    });

    it('leaves the administrator and its sessions alone on a restart with the same password', async () => {
      const { sessions, accounts, users, refreshTokens, verifyAccessToken } = setUp();
      await accounts.ensureAdmin(EMAIL, 'admin password 1');
      const before = users.all();
      const session = await sessions.login(EMAIL, 'admin password 1', ADDRESS);

      await accounts.ensureAdmin(EMAIL, 'admin password 1');

      expect(users.all()).toEqual(before);
      expect(refreshTokens.of(before[0]?.id ?? '').map((token) => token.revokedAt)).toEqual([null]);
      await expect(sessions.authenticate(await verifyAccessToken(session.accessToken))).resolves.toMatchObject({ role: 'admin' });
      await expect(sessions.refresh(session.refreshToken, ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('makes an existing unverified customer with that e-mail the verified administrator, voiding its sessions', async () => {
      const { sessions, accounts, users, clock, stored, refreshTokens, verifyAccessToken, signUp } = setUp();
      const customer = await signUp(EMAIL, PASSWORD);
      const session = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      const claims = await verifyAccessToken(session.accessToken);
      clock.advanceSec(60);

      await accounts.ensureAdmin('ADA@example.com', 'admin password 1');

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
      await expect(sessions.authenticate(claims)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(sessions.refresh(session.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(sessions.login(EMAIL, PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidLoginError);
      await expect(sessions.login(EMAIL, 'admin password 1', ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });

    it('keeps the first verification time of a verified customer', async () => {
      const { signups, accounts, mailer, clock, stored, signUp } = setUp();
      const customer = await signUp(EMAIL, PASSWORD);
      clock.advanceSec(30);
      await signups.verifyEmail(mailer.lastTokenTo(EMAIL));
      const verifiedAt = clock.now();
      clock.advanceSec(60);

      await accounts.ensureAdmin(EMAIL, 'admin password 1');

      expect((await stored(customer.id)).toState()).toMatchObject({ role: 'admin', emailVerifiedAt: verifiedAt });
    });

    it('sets a changed ADMIN_PASSWORD on the next start and voids the sessions of the old one', async () => {
      const { sessions, accounts, users } = setUp();
      await accounts.ensureAdmin(EMAIL, 'admin password 1');
      const session = await sessions.login(EMAIL, 'admin password 1', ADDRESS);

      await accounts.ensureAdmin(EMAIL, 'admin password 2');

      expect(users.all()).toMatchObject([{ role: 'admin', tokenVersion: 2 }]);
      await expect(sessions.refresh(session.refreshToken, ADDRESS)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(sessions.login(EMAIL, 'admin password 1', ADDRESS)).rejects.toBeInstanceOf(InvalidLoginError);
      await expect(sessions.login(EMAIL, 'admin password 2', ADDRESS)).resolves.toMatchObject({ tokenType: 'Bearer' });
    });
  });

  describe('deleteAccount', () => {
    it('runs the registered erasure steps, then deletes the account and its sessions', async () => {
      const { sessions, accounts, erasure, users, refreshTokens, verifyAccessToken, signUp } = setUp();
      const user = await signUp(EMAIL, PASSWORD);
      const session = await sessions.login(EMAIL, PASSWORD, ADDRESS);
      const customer = await sessions.authenticate(await verifyAccessToken(session.accessToken));
      const erased: { userId: string; clientAddress: string; at: Date; stillThere: boolean }[] = [];
      erasure.register('test', async (_tx, account) => {
        erased.push({ ...account, stillThere: (await users.findById(account.userId)) !== null });
      });

      await accounts.deleteAccount(customer, PASSWORD, ADDRESS);

      expect(erased).toEqual([{ userId: user.id, clientAddress: ADDRESS, at: START, stillThere: true }]);
      expect(users.all()).toEqual([]);
      expect(refreshTokens.of(user.id)).toEqual([]);
      await expect(sessions.login(EMAIL, PASSWORD, ADDRESS)).rejects.toBeInstanceOf(InvalidLoginError);
    });

    it('keeps the account when a step fails', async () => {
      const { sessions, accounts, erasure, users, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      const customer = await sessions.authenticate(await verifyAccessToken((await sessions.login(EMAIL, PASSWORD, ADDRESS)).accessToken));
      erasure.register('failing', () => Promise.reject(new Error('step failed')));

      await expect(accounts.deleteAccount(customer, PASSWORD, ADDRESS)).rejects.toThrow('step failed');

      expect(users.all()).toHaveLength(1);
    });

    it('refuses a wrong password and an administrator, deleting nothing', async () => {
      const { sessions, accounts, users, verifyAccessToken, signUp } = setUp();
      await signUp(EMAIL, PASSWORD);
      await accounts.ensureAdmin('admin@example.com', 'admin password 1');
      const customer = await sessions.authenticate(await verifyAccessToken((await sessions.login(EMAIL, PASSWORD, ADDRESS)).accessToken));
      const admin = await sessions.authenticate(await verifyAccessToken((await sessions.login('admin@example.com', 'admin password 1', ADDRESS)).accessToken));

      await expect(accounts.deleteAccount(customer, 'not the password', ADDRESS)).rejects.toBeInstanceOf(WrongPasswordError);
      await expect(accounts.deleteAccount(admin, 'admin password 1', ADDRESS)).rejects.toBeInstanceOf(AdministratorNotDeletableError);

      expect(users.all()).toHaveLength(2);
    });
  });
});
