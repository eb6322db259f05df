import { randomUUID } from 'node:crypto';
import { RefreshTokenStore, type NewRefreshToken, type StoredRefreshToken } from './refresh-token-store.js';

/** Fake for unit tests: the same contract as the SQL store, in a Map. */
export class InMemoryRefreshTokenStore extends RefreshTokenStore {
  readonly tokens = new Map<string, StoredRefreshToken & { tokenHash: string }>();

  async insert(token: NewRefreshToken): Promise<void> {
    const id = randomUUID();
    this.tokens.set(id, { id, subjectId: token.subjectId, tokenVersion: token.tokenVersion, tokenHash: token.tokenHash, expiresAt: token.expiresAt, rotatedAt: null, revokedAt: null });
  }

  async findByHash(tokenHash: string): Promise<StoredRefreshToken | null> {
    const found = [...this.tokens.values()].find((token) => token.tokenHash === tokenHash);
    return found ? { ...found } : null;
  }

  async markRotated(id: string, now: Date): Promise<boolean> {
    const token = this.tokens.get(id);
    if (!token || token.rotatedAt || token.revokedAt) return false;
    token.rotatedAt = now;
    return true;
  }

  async revokeByHash(tokenHash: string, now: Date): Promise<void> {
    for (const token of this.tokens.values()) if (token.tokenHash === tokenHash && !token.revokedAt) token.revokedAt = now;
  }

  async revokeAllOf(subjectId: string, now: Date): Promise<void> {
    for (const token of this.tokens.values()) if (token.subjectId === subjectId && !token.revokedAt) token.revokedAt = now;
  }

  of(subjectId: string): Array<StoredRefreshToken & { tokenHash: string }> {
    return [...this.tokens.values()].filter((token) => token.subjectId === subjectId);
  }
}
