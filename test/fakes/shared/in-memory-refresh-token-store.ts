import { randomUUID } from 'node:crypto';
import { RefreshTokenStore, type NewRefreshToken, type StoredRefreshToken, type Successor } from '../../../src/shared/auth-tokens/refresh-token-store.js';

/** Fake for unit tests: the same contract as the SQL store, in a Map. */
export class InMemoryRefreshTokenStore extends RefreshTokenStore {
  readonly tokens = new Map<string, StoredRefreshToken & { tokenHash: string }>();

  async insert(token: NewRefreshToken): Promise<void> {
    const id = randomUUID();
    this.tokens.set(id, {
      id,
      subjectId: token.subjectId,
      tokenVersion: token.tokenVersion,
      familyId: token.familyId,
      tokenHash: token.tokenHash,
      expiresAt: token.expiresAt,
      rotatedAt: null,
      revokedAt: null,
    });
  }

  async findByHash(tokenHash: string): Promise<StoredRefreshToken | null> {
    const found = [...this.tokens.values()].find((token) => token.tokenHash === tokenHash);
    return found ? { ...found } : null;
  }

  async rotate(id: string, successor: Successor, now: Date): Promise<boolean> {
    const token = this.tokens.get(id);
    if (!token || token.rotatedAt || token.revokedAt) return false;
    if ([...this.tokens.values()].some((other) => other.tokenHash === successor.tokenHash)) throw new Error('duplicate refresh token hash');
    token.rotatedAt = now;
    await this.insert({ ...token, tokenHash: successor.tokenHash, issuedAt: now, expiresAt: successor.expiresAt });
    return true;
  }

  async revokeFamilyOf(tokenHash: string, now: Date): Promise<void> {
    const familyId = [...this.tokens.values()].find((token) => token.tokenHash === tokenHash)?.familyId;
    for (const token of this.tokens.values()) if (familyId !== undefined && token.familyId === familyId && !token.revokedAt) token.revokedAt = now;
  }

  async revokeAllOf(subjectId: string, now: Date): Promise<void> {
    for (const token of this.tokens.values()) if (token.subjectId === subjectId && !token.revokedAt) token.revokedAt = now;
  }

  of(subjectId: string): Array<StoredRefreshToken & { tokenHash: string }> {
    return [...this.tokens.values()].filter((token) => token.subjectId === subjectId);
  }
}
