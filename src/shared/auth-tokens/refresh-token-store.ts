import type { SqlRunner } from '../database/sql.js';

export interface StoredRefreshToken {
  id: string;
  subjectId: string;
  /** The subject's token version when issued: a later version voids the token. */
  tokenVersion: number;
  expiresAt: Date;
  rotatedAt: Date | null;
  revokedAt: Date | null;
}

export interface NewRefreshToken {
  subjectId: string;
  tokenVersion: number;
  tokenHash: string;
  issuedAt: Date;
  expiresAt: Date;
}

/** Port: refresh tokens of one kind of subject (devices, users), found by their HMAC. */
export abstract class RefreshTokenStore {
  abstract insert(token: NewRefreshToken): Promise<void>;
  abstract findByHash(tokenHash: string): Promise<StoredRefreshToken | null>;
  /** Marks the token rotated if it is still live; false when another request got there first. */
  abstract markRotated(id: string, now: Date): Promise<boolean>;
  abstract revokeByHash(tokenHash: string, now: Date): Promise<void>;
  abstract revokeAllOf(subjectId: string, now: Date): Promise<void>;
}

export class SqlRefreshTokenStore extends RefreshTokenStore {
  constructor(
    private readonly sql: SqlRunner,
    private readonly table: 'device_refresh_tokens' | 'user_refresh_tokens',
    private readonly subjectColumn: 'device_id' | 'user_id',
  ) {
    super();
  }

  async insert(token: NewRefreshToken): Promise<void> {
    await this.sql.rows(
      `INSERT INTO ${this.table} (${this.subjectColumn}, token_version, token_hash, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
      [token.subjectId, token.tokenVersion, token.tokenHash, token.issuedAt, token.expiresAt],
    );
  }

  async findByHash(tokenHash: string): Promise<StoredRefreshToken | null> {
    const rows = await this.sql.rows<{ id: string; subject_id: string; token_version: number; expires_at: Date; rotated_at: Date | null; revoked_at: Date | null }>(
      `SELECT id, ${this.subjectColumn} AS subject_id, token_version, expires_at, rotated_at, revoked_at FROM ${this.table} WHERE token_hash = $1`,
      [tokenHash],
    );
    const row = rows[0];
    return row
      ? { id: row.id, subjectId: row.subject_id, tokenVersion: row.token_version, expiresAt: row.expires_at, rotatedAt: row.rotated_at, revokedAt: row.revoked_at }
      : null;
  }

  async markRotated(id: string, now: Date): Promise<boolean> {
    const rows = await this.sql.rows(`UPDATE ${this.table} SET rotated_at = $2 WHERE id = $1 AND rotated_at IS NULL AND revoked_at IS NULL RETURNING id`, [id, now]);
    return rows.length === 1;
  }

  async revokeByHash(tokenHash: string, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE ${this.table} SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL`, [tokenHash, now]);
  }

  async revokeAllOf(subjectId: string, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE ${this.table} SET revoked_at = $2 WHERE ${this.subjectColumn} = $1 AND revoked_at IS NULL`, [subjectId, now]);
  }
}
