import { SecretHasher } from '../crypto/secret-hasher.js';
import { InMemoryRefreshTokenStore } from '../../../test/fakes/shared/in-memory-refresh-token-store.js';
import { InvalidRefreshTokenError, RefreshTokens, type TokenSubject } from './refresh-tokens.js';

/** Subjects with a token version each; counts how often every token of a subject was voided. */
class FakeSubjects implements TokenSubject {
  readonly versions = new Map<string, number>();
  revokeAllCalls: string[] = [];

  async currentTokenVersion(subjectId: string): Promise<number | null> {
    return this.versions.get(subjectId) ?? null;
  }

  async revokeAllTokens(subjectId: string): Promise<void> {
    this.revokeAllCalls.push(subjectId);
    const version = this.versions.get(subjectId);
    if (version !== undefined) this.versions.set(subjectId, version + 1);
  }
}

const NOW = new Date('2026-11-21T12:00:00.000Z');
const TTL_DAYS = 30;
const GRACE_SEC = 30;
const later = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);

function setUp(reuseGraceSec = GRACE_SEC) {
  const store = new InMemoryRefreshTokenStore();
  const hasher = new SecretHasher('p'.repeat(32));
  const subjects = new FakeSubjects();
  subjects.versions.set('subject-1', 1);
  const refreshTokens = new RefreshTokens(store, hasher, { prefix: 'tst_', ttlDays: TTL_DAYS, reuseGraceSec });
  return { store, hasher, subjects, refreshTokens };
}

describe('RefreshTokens', () => {
  describe('issue', () => {
    it('returns a prefixed random token and stores only its HMAC, with the policy expiry', async () => {
      const { store, hasher, refreshTokens } = setUp();

      const token = await refreshTokens.issue('subject-1', 1, NOW);

      expect(token).toMatch(/^tst_[A-Za-z0-9_-]{43}$/);
      const stored = store.of('subject-1');
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({
        subjectId: 'subject-1',
        tokenVersion: 1,
        tokenHash: hasher.hmac(token),
        expiresAt: later(TTL_DAYS * 86_400),
        rotatedAt: null,
        revokedAt: null,
      });
      expect(JSON.stringify(stored[0])).not.toContain(token.slice(4));
    });

    it('issues a different token each time', async () => {
      const { refreshTokens } = setUp();

      const first = await refreshTokens.issue('subject-1', 1, NOW);
      const second = await refreshTokens.issue('subject-1', 1, NOW);

      expect(second).not.toBe(first);
    });
  });

  describe('rotate', () => {
    it('returns the subject and a successor in the same family, marks the token rotated and stores only the successor\'s HMAC', async () => {
      const { store, hasher, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW, 'family-1');

      const rotated = await refreshTokens.rotate(token, later(10), subjects);

      expect(rotated).toEqual({ subjectId: 'subject-1', tokenVersion: 1, familyId: 'family-1', refreshToken: expect.stringMatching(/^tst_[A-Za-z0-9_-]{43}$/), rotatedAt: later(10) });
      expect(rotated.refreshToken).not.toBe(token);
      expect(store.of('subject-1')).toEqual([
        expect.objectContaining({ tokenHash: hasher.hmac(token), familyId: 'family-1', rotatedAt: later(10), revokedAt: null }),
        expect.objectContaining({ tokenHash: hasher.hmac(rotated.refreshToken), familyId: 'family-1', tokenVersion: 1, expiresAt: later(10 + TTL_DAYS * 86_400), rotatedAt: null, revokedAt: null }),
      ]);
      expect(JSON.stringify(store.of('subject-1'))).not.toContain(rotated.refreshToken.slice(4));
      expect(subjects.revokeAllCalls).toEqual([]);
      await expect(refreshTokens.rotate(rotated.refreshToken, later(20), subjects)).resolves.toMatchObject({ subjectId: 'subject-1', familyId: 'family-1' });
    });

    it('opens a new family for each issued token unless told which', async () => {
      const { store, refreshTokens } = setUp();

      await refreshTokens.issue('subject-1', 1, NOW);
      await refreshTokens.issue('subject-1', 1, NOW);

      const [first, second] = store.of('subject-1').map((stored) => stored.familyId);
      expect(first).not.toBe(second);
    });

    it('treats a second use of a rotated token after the grace as theft: voids the subject and every token it has', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);
      const { refreshToken: successor } = await refreshTokens.rotate(token, later(10), subjects);
      const otherSubjects = await refreshTokens.issue('subject-2', 1, NOW);
      subjects.versions.set('subject-2', 1);
      const afterGrace = later(10 + GRACE_SEC + 1);

      await expect(refreshTokens.rotate(token, afterGrace, subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(subjects.revokeAllCalls).toEqual(['subject-1']);
      expect(subjects.versions.get('subject-1')).toBe(2);
      expect(store.of('subject-1').map((stored) => stored.revokedAt)).toEqual([afterGrace, afterGrace]);
      expect(store.of('subject-2').map((stored) => stored.revokedAt)).toEqual([null]);
      await expect(refreshTokens.rotate(successor, later(100), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(refreshTokens.rotate(otherSubjects, later(100), subjects)).resolves.toMatchObject({ subjectId: 'subject-2' });
    });

    describe('a repeat of the immediately previous token (the client lost the answer)', () => {
      it('within the grace: the same successor and rotation time, nothing changed, and the successor still works', async () => {
        const { store, subjects, refreshTokens } = setUp();
        const token = await refreshTokens.issue('subject-1', 1, NOW);
        const first = await refreshTokens.rotate(token, later(10), subjects);
        const before = store.of('subject-1');

        const repeat = await refreshTokens.rotate(token, later(10 + GRACE_SEC), subjects);

        expect(repeat).toEqual(first);
        expect(store.of('subject-1')).toEqual(before);
        expect(subjects.revokeAllCalls).toEqual([]);
        await expect(refreshTokens.rotate(first.refreshToken, later(50), subjects)).resolves.toMatchObject({ subjectId: 'subject-1' });
      });

      it('at once, concurrently: every request gets the same successor and the subject stays valid', async () => {
        // Without the grace the loser of this race would void the subject; RFC 9700 allows this grace.
        const { store, subjects, refreshTokens } = setUp();
        const token = await refreshTokens.issue('subject-1', 1, NOW);

        const results = await Promise.all([1, 2, 3].map(() => refreshTokens.rotate(token, later(1), subjects)));

        expect(new Set(results.map((result) => result.refreshToken)).size).toBe(1);
        expect(results.every((result) => result.rotatedAt.getTime() === later(1).getTime())).toBe(true);
        expect(subjects.revokeAllCalls).toEqual([]);
        expect(store.of('subject-1').map((stored) => [stored.rotatedAt, stored.revokedAt])).toEqual([
          [later(1), null],
          [null, null],
        ]);
        await expect(refreshTokens.rotate(results[0].refreshToken, later(40), subjects)).resolves.toMatchObject({ subjectId: 'subject-1' });
      });

      it('after the grace: reuse', async () => {
        const { subjects, refreshTokens } = setUp();
        const token = await refreshTokens.issue('subject-1', 1, NOW);
        await refreshTokens.rotate(token, later(10), subjects);

        await expect(refreshTokens.rotate(token, later(10 + GRACE_SEC + 1), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

        expect(subjects.revokeAllCalls).toEqual(['subject-1']);
      });

      it('two generations old (its successor was rotated too), even within the grace: reuse', async () => {
        const { store, subjects, refreshTokens } = setUp();
        const token = await refreshTokens.issue('subject-1', 1, NOW);
        const second = await refreshTokens.rotate(token, later(1), subjects);
        const third = await refreshTokens.rotate(second.refreshToken, later(2), subjects);

        await expect(refreshTokens.rotate(token, later(3), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

        expect(subjects.revokeAllCalls).toEqual(['subject-1']);
        expect(store.of('subject-1').every((stored) => stored.revokedAt !== null)).toBe(true);
        await expect(refreshTokens.rotate(third.refreshToken, later(4), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      });

      it('with a grace of 0: every repeat is reuse, a concurrent one too', async () => {
        const { store, subjects, refreshTokens } = setUp(0);
        const token = await refreshTokens.issue('subject-1', 1, NOW);

        const results = await Promise.allSettled([refreshTokens.rotate(token, later(1), subjects), refreshTokens.rotate(token, later(1), subjects)]);

        expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
        const rejected = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
        expect(rejected?.reason).toBeInstanceOf(InvalidRefreshTokenError);
        expect(subjects.revokeAllCalls).toEqual(['subject-1']);
        expect(store.of('subject-1').every((stored) => stored.revokedAt !== null)).toBe(true);
      });

      it('after the session was logged out: refused, without voiding the subject', async () => {
        const { subjects, refreshTokens } = setUp();
        const token = await refreshTokens.issue('subject-1', 1, NOW);
        const { refreshToken: successor } = await refreshTokens.rotate(token, later(1), subjects);
        await refreshTokens.revokeSession(successor, later(2));

        await expect(refreshTokens.rotate(token, later(3), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

        expect(subjects.revokeAllCalls).toEqual([]);
      });

      it('after reuse detection voided the subject: refused, without voiding it again', async () => {
        const { subjects, refreshTokens } = setUp();
        const token = await refreshTokens.issue('subject-1', 1, NOW);
        const second = await refreshTokens.rotate(token, later(1), subjects);
        await refreshTokens.rotate(second.refreshToken, later(2), subjects);
        await expect(refreshTokens.rotate(token, later(3), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

        await expect(refreshTokens.rotate(second.refreshToken, later(4), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

        expect(subjects.revokeAllCalls).toEqual(['subject-1']);
      });
    });

    it('accepts a token a second before it expires', async () => {
      const { subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);

      await expect(refreshTokens.rotate(token, later(TTL_DAYS * 86_400 - 1), subjects)).resolves.toMatchObject({ subjectId: 'subject-1' });
    });

    it('refuses an expired token without voiding the subject', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);

      await expect(refreshTokens.rotate(token, later(TTL_DAYS * 86_400), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(subjects.revokeAllCalls).toEqual([]);
      expect(subjects.versions.get('subject-1')).toBe(1);
      expect(store.of('subject-1').map((stored) => [stored.rotatedAt, stored.revokedAt])).toEqual([[null, null]]);
    });

    it('refuses a token issued for an earlier token version of the subject', async () => {
      const { subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);
      subjects.versions.set('subject-1', 2);

      await expect(refreshTokens.rotate(token, later(10), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(subjects.revokeAllCalls).toEqual([]);
      const current = await refreshTokens.issue('subject-1', 2, NOW);
      await expect(refreshTokens.rotate(current, later(10), subjects)).resolves.toMatchObject({ subjectId: 'subject-1' });
    });

    it('refuses a revoked token', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);
      await refreshTokens.revokeAllOf('subject-1', later(5));

      await expect(refreshTokens.rotate(token, later(10), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(store.of('subject-1').map((stored) => [stored.rotatedAt, stored.revokedAt])).toEqual([[null, later(5)]]);
      expect(subjects.revokeAllCalls).toEqual([]);
    });

    it('refuses an unknown token', async () => {
      const { subjects, refreshTokens } = setUp();
      await refreshTokens.issue('subject-1', 1, NOW);

      await expect(refreshTokens.rotate('tst_unknown', later(10), subjects)).rejects.toMatchObject({
        name: 'InvalidRefreshTokenError',
        code: 'INVALID_TOKEN',
        kind: 'unauthorized',
      });
      expect(subjects.revokeAllCalls).toEqual([]);
    });

    it('refuses a token whose subject no longer exists', async () => {
      const { subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-gone', 1, NOW);

      await expect(refreshTokens.rotate(token, later(10), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(subjects.revokeAllCalls).toEqual([]);
    });

    it('refuses a rotated token of a subject that no longer exists without trying to void the subject', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);
      await refreshTokens.rotate(token, later(10), subjects);
      subjects.versions.delete('subject-1');

      await expect(refreshTokens.rotate(token, later(10 + GRACE_SEC + 1), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(subjects.revokeAllCalls).toEqual([]);
      expect(store.of('subject-1').map((stored) => stored.revokedAt)).toEqual([null, null]);
    });
  });

  describe('revokeSession (logout)', () => {
    it('ends the token\'s session, every token of its family, leaving the other sessions of the subject alive', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW, 'laptop');
      const other = await refreshTokens.issue('subject-1', 1, NOW, 'phone');
      const { refreshToken: successor } = await refreshTokens.rotate(token, later(1), subjects);

      await refreshTokens.revokeSession(successor, later(5));

      await expect(refreshTokens.rotate(successor, later(10), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(refreshTokens.rotate(token, later(10), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      expect(subjects.revokeAllCalls).toEqual([]);
      expect(store.of('subject-1').map((stored) => [stored.familyId, stored.revokedAt])).toEqual([
        ['laptop', later(5)],
        ['phone', null],
        ['laptop', later(5)],
      ]);
      await expect(refreshTokens.rotate(other, later(10), subjects)).resolves.toMatchObject({ subjectId: 'subject-1', familyId: 'phone' });
    });

    it('ignores an unknown token, so a logout can be retried', async () => {
      const { store, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);

      await expect(refreshTokens.revokeSession('tst_unknown', later(5))).resolves.toBeUndefined();
      await refreshTokens.revokeSession(token, later(5));
      await expect(refreshTokens.revokeSession(token, later(6))).resolves.toBeUndefined();

      expect(store.of('subject-1').map((stored) => stored.revokedAt)).toEqual([later(5)]);
    });
  });
});
