import type { SqlRunner } from '../database/sql.js';

export interface StoredRefreshToken {
  id: string;
  subjectId: string;
  /** The subject's token version when issued: a later version voids the token. */
  tokenVersion: number;
  /** The session: the token a login issued and every successor of it share this id. */
  familyId: string;
  expiresAt: Date;
  rotatedAt: Date | null;
  revokedAt: Date | null;
}

export interface NewRefreshToken {
  subjectId: string;
  tokenVersion: number;
  familyId: string;
  tokenHash: string;
  issuedAt: Date;
  expiresAt: Date;
}

export interface Successor {
  tokenHash: string;
  expiresAt: Date;
}

/** Port: refresh tokens of one kind of subject (devices, users), found by their HMAC. */
export abstract class RefreshTokenStore {
  abstract insert(token: NewRefreshToken): Promise<void>;
  abstract findByHash(tokenHash: string): Promise<StoredRefreshToken | null>;
  /**
   * At once, if the token is still live: marks it rotated at `now` and stores its successor (same
   * subject, token version and family, issued `now`). False when it was not live any more: another
   * request rotated or revoked it first.
   */
  abstract rotate(id: string, successor: Successor, now: Date): Promise<boolean>;
  /** Logout: revokes every token of the session the token belongs to. */
  abstract revokeFamilyOf(tokenHash: string, now: Date): Promise<void>;
  abstract revokeAllOf(subjectId: string, now: Date): Promise<void>;
}

interface TokenRow {
  id: string;
  subject_id: string;
  token_version: number;
  family_id: string;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
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
      `INSERT INTO ${this.table} (${this.subjectColumn}, token_version, family_id, token_hash, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [token.subjectId, token.tokenVersion, token.familyId, token.tokenHash, token.issuedAt, token.expiresAt],
    );
  }

  async findByHash(tokenHash: string): Promise<StoredRefreshToken | null> {
    const rows = await this.sql.rows<TokenRow>(
      `SELECT id, ${this.subjectColumn} AS subject_id, token_version, family_id, expires_at, rotated_at, revoked_at FROM ${this.table} WHERE token_hash = $1`,
      [tokenHash],
    );
    const row = rows[0];
    return row
      ? {
          id: row.id,
          subjectId: row.subject_id,
          tokenVersion: row.token_version,
          familyId: row.family_id,
          expiresAt: row.expires_at,
          rotatedAt: row.rotated_at,
          revokedAt: row.revoked_at,
        }
      : null;
  }

  async rotate(id: string, successor: Successor, now: Date): Promise<boolean> {
    // One statement: a concurrent rotation of the same token waits for this one's row lock, then
    // finds the token rotated and this successor committed.
    const rows = await this.sql.rows(
      `WITH presented AS (
         UPDATE ${this.table} SET rotated_at = $2 WHERE id = $1 AND rotated_at IS NULL AND revoked_at IS NULL
         RETURNING ${this.subjectColumn} AS subject_id, token_version, family_id
       )
       INSERT INTO ${this.table} (${this.subjectColumn}, token_version, family_id, token_hash, issued_at, expires_at)
       SELECT subject_id, token_version, family_id, $3, $2, $4 FROM presented
       RETURNING id`,
      [id, now, successor.tokenHash, successor.expiresAt],
    );
    return rows.length === 1;
  }

  async revokeFamilyOf(tokenHash: string, now: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE ${this.table} SET revoked_at = $2
        WHERE family_id = (SELECT family_id FROM ${this.table} WHERE token_hash = $1) AND revoked_at IS NULL`,
      [tokenHash, now],
    );
  }

  async revokeAllOf(subjectId: string, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE ${this.table} SET revoked_at = $2 WHERE ${this.subjectColumn} = $1 AND revoked_at IS NULL`, [subjectId, now]);
  }
}
