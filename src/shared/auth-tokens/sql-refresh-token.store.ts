import type { Sql } from '../database/sql.js';
import { RefreshTokenStore, type NewRefreshToken, type StoredRefreshToken, type Successor } from './refresh-token-store.js';
import { rotateRefreshTokenSql } from './refresh-token-rotation.sql.js';

/** Where one kind of subject keeps its refresh tokens: the table (with RefreshTokenColumns) and its subject's column. */
export interface RefreshTokenTable {
  name: string;
  subjectColumn: string;
}

/**
 * Refresh tokens of one kind of subject (a cold path); rotation is one statement
 * (refresh-token-rotation.sql.ts). `revoked` hears, after the commit, whose sessions a revocation
 * ended (a cache of live sessions on this instance forgets them at once).
 */
export class SqlRefreshTokenStore extends RefreshTokenStore {
  constructor(
    private readonly sql: Sql,
    private readonly table: RefreshTokenTable,
    private readonly revoked: (subjectId: string) => void = () => undefined,
  ) {
    super();
  }

  async insert(token: NewRefreshToken): Promise<void> {
    await this.sql.rows(
      `INSERT INTO ${this.table.name} (${this.table.subjectColumn}, token_version, family_id, token_hash, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [token.subjectId, token.tokenVersion, token.familyId, token.tokenHash, token.issuedAt, token.expiresAt],
    );
  }

  async findByHash(tokenHash: string): Promise<StoredRefreshToken | null> {
    const [row] = await this.sql.rows<{ id: string; subject_id: string; token_version: number; family_id: string; expires_at: Date; rotated_at: Date | null; revoked_at: Date | null }>(
      `SELECT id, ${this.table.subjectColumn} AS subject_id, token_version, family_id, expires_at, rotated_at, revoked_at FROM ${this.table.name} WHERE token_hash = $1 LIMIT 1`,
      [tokenHash],
    );
    return row
      ? { id: row.id, subjectId: row.subject_id, tokenVersion: row.token_version, familyId: row.family_id, expiresAt: row.expires_at, rotatedAt: row.rotated_at, revokedAt: row.revoked_at }
      : null;
  }

  async rotate(id: string, successor: Successor, now: Date): Promise<boolean> {
    const rows = await this.sql.rows<{ id: string }>(rotateRefreshTokenSql(this.table.name, this.table.subjectColumn), [id, now, successor.tokenHash, successor.expiresAt]);
    return rows.length === 1;
  }

  async revokeFamilyOf(tokenHash: string, now: Date): Promise<void> {
    // One statement: the family is looked up and revoked together.
    const subjects = await this.sql.rows<{ subject_id: string }>(
      `WITH revoked AS (
         UPDATE ${this.table.name} SET revoked_at = $2
          WHERE family_id = (SELECT family_id FROM ${this.table.name} WHERE token_hash = $1) AND revoked_at IS NULL
          RETURNING ${this.table.subjectColumn} AS subject_id
       )
       SELECT DISTINCT subject_id FROM revoked`,
      [tokenHash, now],
    );
    for (const row of subjects) this.revoked(row.subject_id);
  }

  async revokeAllOf(subjectId: string, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE ${this.table.name} SET revoked_at = $2 WHERE ${this.table.subjectColumn} = $1 AND revoked_at IS NULL`, [subjectId, now]);
    this.revoked(subjectId);
  }
}
