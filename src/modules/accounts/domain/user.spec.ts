import { User, type Role } from './user.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const LATER = new Date('2026-11-22T08:30:00.000Z');

function aUser(overrides: { role?: Role; verified?: boolean } = {}): User {
  return User.create({ id: 'user-1', email: 'ada@example.com', passwordHash: '$argon2id$stand-in', role: 'customer', verified: false, now: NOW, ...overrides });
}

describe('User', () => {
  describe('normalizeEmail', () => {
    it.each([
      ['  Ada@Example.COM ', 'ada@example.com'],
      ['\tADA@EXAMPLE.COM\n', 'ada@example.com'],
      ['ada@example.com', 'ada@example.com'],
    ])('turns %j into %j', (raw, normalized) => {
      expect(User.normalizeEmail(raw)).toBe(normalized);
    });
  });

  describe('create', () => {
    it('makes an unverified account with token version 1', () => {
      const user = aUser();

      expect(user.toState()).toEqual({
        id: 'user-1',
        email: 'ada@example.com',
        passwordHash: '$argon2id$stand-in',
        role: 'customer',
        emailVerifiedAt: null,
        tokenVersion: 1,
        createdAt: NOW,
        alertEmails: true,
      });
      expect(user.emailVerified).toBe(false);
    });

    it('turns alert e-mails off and on again', () => {
      const user = aUser();

      user.setAlertEmails(false);
      expect(user.alertEmails).toBe(false);
      user.setAlertEmails(true);
      expect(user.toState().alertEmails).toBe(true);
    });

    it('makes a verified account verified as of its creation', () => {
      const user = aUser({ verified: true });

      expect(user.emailVerified).toBe(true);
      expect(user.toState().emailVerifiedAt).toEqual(NOW);
    });
  });

  describe('verifyEmail', () => {
    it('records the first verification and keeps it on later calls', () => {
      const user = aUser();

      user.verifyEmail(NOW);
      user.verifyEmail(LATER);

      expect(user.emailVerified).toBe(true);
      expect(user.toState().emailVerifiedAt).toEqual(NOW);
    });

    it('keeps the creation time of an account created verified', () => {
      const user = aUser({ verified: true });

      user.verifyEmail(LATER);

      expect(user.toState().emailVerifiedAt).toEqual(NOW);
    });
  });

  describe('revokeTokens', () => {
    it('bumps the token version each time, changing nothing else', () => {
      const user = aUser();
      const before = user.toState();

      user.revokeTokens();
      user.revokeTokens();

      expect(user.tokenVersion).toBe(3);
      expect(user.toState()).toEqual({ ...before, tokenVersion: 3 });
    });
  });

  describe('promoteToAdmin', () => {
    it('makes a customer a verified administrator with the new password and voids its tokens', () => {
      const user = aUser();

      user.promoteToAdmin('$argon2id$new', LATER);

      expect(user.toState()).toEqual({ ...aUser().toState(), role: 'admin', passwordHash: '$argon2id$new', emailVerifiedAt: LATER, tokenVersion: 2 });
      expect(user.isAdmin).toBe(true);
    });

    it('keeps the first verification time', () => {
      const user = aUser({ verified: true });

      user.promoteToAdmin('$argon2id$new', LATER);

      expect(user.toState().emailVerifiedAt).toEqual(NOW);
    });
  });

  describe('isAdmin', () => {
    it.each<[Role, boolean]>([
      ['admin', true],
      ['customer', false],
    ])('is %s → %s', (role, isAdmin) => {
      expect(aUser({ role }).isAdmin).toBe(isAdmin);
    });
  });

  describe('restore and toState', () => {
    it('copy the state, so changing one object does not change another', () => {
      const state = aUser().toState();
      const restored = User.restore(state);

      restored.revokeTokens();
      restored.verifyEmail(LATER);

      expect(state.tokenVersion).toBe(1);
      expect(state.emailVerifiedAt).toBeNull();
      expect(User.restore(state).toState()).toEqual(state);
    });
  });
});
