import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { ApiKey, ApiKeyHolder } from './api-key.js';

/** Where keys are kept: by their keyed hash (SecretHasher.hmac), never the key. */
export abstract class ApiKeyStore {
  /** Stores the key unless its holder already holds `max`; false then, and nothing stored. `onInserted` runs in the same transaction. */
  abstract insert(apiKey: ApiKey, keyHash: string, max: number, onInserted?: (tx: SqlRunner) => Promise<void>): Promise<boolean>;

  /** The holder's keys, newest first, after `after` (the last of the previous page). */
  abstract page(holder: ApiKeyHolder, limit: number, after: { createdAt: Date; keyId: string } | null): Promise<ApiKey[]>;

  /** False when the holder has no key of this id (another holder's included). `onDeleted` runs in the same transaction with the key. */
  abstract delete(holder: ApiKeyHolder, keyId: string, onDeleted?: (tx: SqlRunner, apiKey: ApiKey) => Promise<void>): Promise<boolean>;

  /** The key of this hash and whether its account's address is verified (an organization's key: true); null when none. */
  abstract findByHash(keyHash: string): Promise<{ apiKey: ApiKey; emailVerified: boolean } | null>;

  /** Sets lastUsedAt to `now` unless another request already did since `staleBefore`. */
  abstract touch(keyId: string, now: Date, staleBefore: Date): Promise<void>;
}
