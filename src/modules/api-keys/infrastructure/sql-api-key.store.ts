import { Injectable } from '@nestjs/common';
import type { ApiKeyScope } from '../../../auth/principals.js';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import { ACCOUNT_SUMMARIES } from '../../accounts/sql-api.js';
import { ApiKey, type ApiKeyHolder } from '../domain/api-key.js';
import { ApiKeyStore } from '../domain/api-key.store.js';

interface ApiKeyRow {
  key_id: string;
  user_id: string | null;
  organization_id: string | null;
  name: string;
  scope: ApiKeyScope;
  created_at: Date;
  last_used_at: Date | null;
}

const COLUMNS = 'k.key_id, k.user_id, k.organization_id, k.name, k.scope, k.created_at, k.last_used_at';

const holderOf = (row: ApiKeyRow): ApiKeyHolder => (row.user_id !== null ? { kind: 'user', id: row.user_id } : { kind: 'organization', id: row.organization_id! });

const toApiKey = (row: ApiKeyRow): ApiKey =>
  ApiKey.restore({ keyId: row.key_id, holder: holderOf(row), name: row.name, scope: row.scope, createdAt: row.created_at, lastUsedAt: row.last_used_at });

/** The column naming the holder: both are uuid columns of api_keys, so the statements differ only in it. */
const holderColumn = (holder: ApiKeyHolder): string => (holder.kind === 'user' ? 'user_id' : 'organization_id');

@Injectable()
export class SqlApiKeyStore extends ApiKeyStore {
  constructor(private readonly sql: Sql) {
    super();
  }

  async insert(apiKey: ApiKey, keyHash: string, max: number, onInserted?: (tx: SqlRunner) => Promise<void>): Promise<boolean> {
    return this.sql.transaction(async (tx) => {
      // The holder locked (an account's row; an organization's id, whose table is another module's):
      // two concurrent creations cannot both pass the count.
      const { holder } = apiKey;
      const lock = holder.kind === 'user' ? `SELECT 1 FROM ${ACCOUNT_SUMMARIES} WHERE user_id = $1 FOR UPDATE` : "SELECT pg_advisory_xact_lock(hashtext('api_keys'), hashtext($1))";
      await tx.rows(lock, [holder.id]);
      const [{ count }] = await tx.rows<{ count: number }>(`SELECT count(*)::int AS count FROM api_keys WHERE ${holderColumn(holder)} = $1`, [holder.id]);
      if (count >= max) return false;
      await tx.rows('INSERT INTO api_keys (key_id, user_id, organization_id, name, scope, key_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        apiKey.keyId,
        holder.kind === 'user' ? holder.id : null,
        holder.kind === 'organization' ? holder.id : null,
        apiKey.name,
        apiKey.scope,
        keyHash,
        apiKey.createdAt,
      ]);
      await onInserted?.(tx);
      return true;
    });
  }

  async page(holder: ApiKeyHolder, limit: number, after: { createdAt: Date; keyId: string } | null): Promise<ApiKey[]> {
    const rows = await this.sql.rows<ApiKeyRow>(
      `SELECT ${COLUMNS} FROM api_keys k
        WHERE k.${holderColumn(holder)} = $1 AND ($2::timestamptz IS NULL OR (k.created_at, k.key_id) < ($2::timestamptz, $3::uuid))
        ORDER BY k.created_at DESC, k.key_id DESC LIMIT $4`,
      [holder.id, after?.createdAt ?? null, after?.keyId ?? null, limit],
    );
    return rows.map(toApiKey);
  }

  async delete(holder: ApiKeyHolder, keyId: string, onDeleted?: (tx: SqlRunner, apiKey: ApiKey) => Promise<void>): Promise<boolean> {
    return this.sql.transaction(async (tx) => {
      const [row] = await tx.rows<ApiKeyRow>(`DELETE FROM api_keys k WHERE k.key_id = $1 AND k.${holderColumn(holder)} = $2 RETURNING ${COLUMNS}`, [keyId, holder.id]);
      if (!row) return false;
      await onDeleted?.(tx, toApiKey(row));
      return true;
    });
  }

  async findByHash(keyHash: string): Promise<{ apiKey: ApiKey; emailVerified: boolean } | null> {
    const [row] = await this.sql.rows<ApiKeyRow & { email_verified: boolean }>(
      `SELECT ${COLUMNS}, COALESCE(u.email_verified, true) AS email_verified FROM api_keys k LEFT JOIN ${ACCOUNT_SUMMARIES} u ON u.user_id = k.user_id WHERE k.key_hash = $1`,
      [keyHash],
      'api_key_by_hash',
    );
    return row ? { apiKey: toApiKey(row), emailVerified: row.email_verified } : null;
  }

  async touch(keyId: string, now: Date, staleBefore: Date): Promise<void> {
    await this.sql.rows('UPDATE api_keys SET last_used_at = $2 WHERE key_id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)', [keyId, now, staleBefore]);
  }
}
