import { SecretHasher } from '../crypto/secret-hasher.js';
import { InMemoryRefreshTokenStore } from './in-memory-refresh-token.store.js';
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
const later = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);

function setUp() {
  const store = new InMemoryRefreshTokenStore();
  const hasher = new SecretHasher('p'.repeat(32));
  const subjects = new FakeSubjects();
  subjects.versions.set('subject-1', 1);
  const refreshTokens = new RefreshTokens(store, hasher, { prefix: 'tst_', ttlDays: TTL_DAYS });
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
    it('returns the subject and marks the token rotated', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);

      await expect(refreshTokens.rotate(token, later(10), subjects)).resolves.toMatchObject({ subjectId: 'subject-1' });

      expect(store.of('subject-1').map((stored) => [stored.rotatedAt, stored.revokedAt])).toEqual([[later(10), null]]);
      expect(subjects.revokeAllCalls).toEqual([]);
    });

    it('treats a second use of a rotated token as theft: voids the subject and every token it has', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);
      await refreshTokens.rotate(token, later(10), subjects);
      const successor = await refreshTokens.issue('subject-1', 1, later(10));
      const otherSubjects = await refreshTokens.issue('subject-2', 1, NOW);
      subjects.versions.set('subject-2', 1);

      await expect(refreshTokens.rotate(token, later(20), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(subjects.revokeAllCalls).toEqual(['subject-1']);
      expect(subjects.versions.get('subject-1')).toBe(2);
      expect(store.of('subject-1').map((stored) => stored.revokedAt)).toEqual([later(20), later(20)]);
      expect(store.of('subject-2').map((stored) => stored.revokedAt)).toEqual([null]);
      await expect(refreshTokens.rotate(successor, later(30), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      await expect(refreshTokens.rotate(otherSubjects, later(30), subjects)).resolves.toMatchObject({ subjectId: 'subject-2' });
    });

    it('lets only one of two concurrent rotations of the same token win, and voids the subject', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);

      const results = await Promise.allSettled([refreshTokens.rotate(token, later(1), subjects), refreshTokens.rotate(token, later(1), subjects)]);

      expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
      const rejected = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      expect(rejected?.reason).toBeInstanceOf(InvalidRefreshTokenError);
      expect(subjects.revokeAllCalls).toEqual(['subject-1']);
      expect(store.of('subject-1').every((stored) => stored.revokedAt !== null)).toBe(true);
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

      await expect(refreshTokens.rotate(token, later(20), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

      expect(subjects.revokeAllCalls).toEqual([]);
      expect(store.of('subject-1').map((stored) => stored.revokedAt)).toEqual([null]);
    });
  });

  describe('revoke (logout)', () => {
    it('stops the token from rotating, leaving the other tokens of the subject alive', async () => {
      const { store, subjects, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);
      const other = await refreshTokens.issue('subject-1', 1, NOW);

      await refreshTokens.revoke(token, later(5));

      await expect(refreshTokens.rotate(token, later(10), subjects)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
      expect(subjects.revokeAllCalls).toEqual([]);
      expect(store.of('subject-1').map((stored) => stored.revokedAt)).toEqual([later(5), null]);
      await expect(refreshTokens.rotate(other, later(10), subjects)).resolves.toMatchObject({ subjectId: 'subject-1' });
    });

    it('ignores an unknown token, so a logout can be retried', async () => {
      const { store, refreshTokens } = setUp();
      const token = await refreshTokens.issue('subject-1', 1, NOW);

      await expect(refreshTokens.revoke('tst_unknown', later(5))).resolves.toBeUndefined();
      await refreshTokens.revoke(token, later(5));
      await expect(refreshTokens.revoke(token, later(6))).resolves.toBeUndefined();

      expect(store.of('subject-1').map((stored) => stored.revokedAt)).toEqual([later(5)]);
    });
  });
});
