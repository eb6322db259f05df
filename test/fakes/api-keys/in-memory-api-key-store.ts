import { ApiKey, type ApiKeyHolder } from '../../../src/modules/api-keys/domain/api-key.js';
import { sameHolder } from '../../../src/shared/kernel/integration-holder.js';
import { ApiKeyStore } from '../../../src/modules/api-keys/domain/api-key.store.js';
import type { SqlRunner } from '../../../src/shared/database/sql-runner.js';

const held = (key: ApiKey, holder: ApiKeyHolder) => sameHolder(key.holder, holder);

const NO_SQL: SqlRunner = { rows: () => Promise.reject(new Error('the in-memory key store has no SQL transaction')) };

/** ApiKeyStore in memory, for unit tests: what the SQL store does, without the database. */
export class InMemoryApiKeyStore extends ApiKeyStore {
  readonly rows = new Map<string, { apiKey: ApiKey; keyHash: string }>();
  /** Accounts whose address is verified (the SQL store joins the accounts module's ACCOUNT_SUMMARIES). */
  readonly verified = new Set<string>();
  touches = 0;

  async insert(apiKey: ApiKey, keyHash: string, max: number, onInserted?: (tx: SqlRunner) => Promise<void>): Promise<boolean> {
    if ([...this.rows.values()].filter((row) => held(row.apiKey, apiKey.holder)).length >= max) return false;
    await onInserted?.(NO_SQL);
    this.rows.set(apiKey.keyId, { apiKey, keyHash });
    return true;
  }

  async page(holder: ApiKeyHolder, limit: number, after: { createdAt: Date; keyId: string } | null): Promise<ApiKey[]> {
    const newestFirst = (a: ApiKey, b: ApiKey) => b.createdAt.getTime() - a.createdAt.getTime() || (a.keyId < b.keyId ? 1 : -1);
    const isAfter = (key: ApiKey) =>
      !after || key.createdAt.getTime() < after.createdAt.getTime() || (key.createdAt.getTime() === after.createdAt.getTime() && key.keyId < after.keyId);
    return [...this.rows.values()]
      .map((row) => row.apiKey)
      .filter((key) => held(key, holder) && isAfter(key))
      .sort(newestFirst)
      .slice(0, limit);
  }

  async delete(holder: ApiKeyHolder, keyId: string, onDeleted?: (tx: SqlRunner, apiKey: ApiKey) => Promise<void>): Promise<boolean> {
    const row = this.rows.get(keyId);
    if (!row || !held(row.apiKey, holder)) return false;
    await onDeleted?.(NO_SQL, row.apiKey);
    return this.rows.delete(keyId);
  }

  async findByHash(keyHash: string): Promise<{ apiKey: ApiKey; emailVerified: boolean } | null> {
    const row = [...this.rows.values()].find((candidate) => candidate.keyHash === keyHash);
    return row ? { apiKey: row.apiKey, emailVerified: row.apiKey.holder.kind === 'organization' || this.verified.has(row.apiKey.holder.id) } : null;
  }

  async touch(keyId: string, now: Date, staleBefore: Date): Promise<void> {
    const row = this.rows.get(keyId);
    if (!row || (row.apiKey.lastUsedAt && row.apiKey.lastUsedAt > staleBefore)) return;
    const { apiKey } = row;
    row.apiKey = ApiKey.restore({ keyId: apiKey.keyId, holder: apiKey.holder, name: apiKey.name, scope: apiKey.scope, createdAt: apiKey.createdAt, lastUsedAt: now });
    this.touches += 1;
  }
}
