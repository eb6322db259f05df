import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { API_KEY_PREFIX, ApiKeyAuthenticator, CustomerPrincipal, type ApiKeyScope } from '../../../auth/principals.js';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { InvalidBearerTokenError, NotFoundError } from '../../../shared/domain-error.js';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import { ApiKey, LAST_USED_RESOLUTION_MS, MAX_API_KEYS_PER_USER, type ApiKeyHolder } from '../domain/api-key.js';
import { ApiKeyStore } from '../domain/api-key.store.js';
import { TooManyApiKeysError } from '../domain/api-keys.errors.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';

/** `dck_` and 256 random bits in base64url: the only shape worth a lookup. */
const KEY_FORMAT = new RegExp(`^${API_KEY_PREFIX}[A-Za-z0-9_-]{43}$`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An organization's key's entries belong to the organization's log (their actor is the member who asked). */
const organizationOf = (holder: ApiKeyHolder): { deviceId?: null; ownerId?: string } => (holder.kind === 'organization' ? { deviceId: null, ownerId: holder.id } : {});

@Injectable()
export class ApiKeysService extends ApiKeyAuthenticator {
  constructor(
    private readonly store: ApiKeyStore,
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly env: Env,
    private readonly clock: Clock,
    private readonly audit: AuditLog,
  ) {
    super();
  }

  /** A new key: the key itself is returned here only; storage keeps its keyed hash. */
  async create(holder: ApiKeyHolder, name: string, scope: ApiKeyScope, by: AuditContext): Promise<{ apiKey: ApiKey; key: string }> {
    const key = `${API_KEY_PREFIX}${SecretHasher.randomToken()}`;
    const apiKey = ApiKey.create({ keyId: randomUUID(), holder, name, scope, now: this.clock.now() });
    const inserted = await this.store.insert(apiKey, this.hasher.hmac(key), MAX_API_KEYS_PER_USER, (tx) =>
      // The key's name and scope, never the key.
      this.audit.record(tx, { by, action: 'api_key.created', target: `api_key:${apiKey.keyId}`, ...organizationOf(holder), detail: { name: apiKey.name, scope }, at: apiKey.createdAt }),
    );
    if (!inserted) throw new TooManyApiKeysError();
    return { apiKey, key };
  }

  /** The holder's keys, newest first: a page of `limit` after `cursor` (a nextCursor this returned). */
  async list(holder: ApiKeyHolder, limit: number, cursor?: string): Promise<{ items: ApiKey[]; nextCursor: string | null }> {
    const after = cursor === undefined ? null : decodeTimeCursor(cursor, (key) => UUID.test(key));
    const rows = await this.store.page(holder, limit + 1, after && { createdAt: after.ts, keyId: after.key });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit ? encodeTimeCursor(last.createdAt, last.keyId) : null };
  }

  /** Revokes at once on every instance: keys are looked up on every request, never remembered. */
  async revoke(holder: ApiKeyHolder, keyId: string, by: AuditContext): Promise<void> {
    const now = this.clock.now();
    const deleted = await this.store.delete(holder, keyId, (tx, apiKey) =>
      this.audit.record(tx, { by, action: 'api_key.revoked', target: `api_key:${keyId}`, ...organizationOf(holder), detail: { name: apiKey.name, scope: apiKey.scope }, at: now }),
    );
    if (!deleted) throw new NotFoundError(holder.kind === 'user' ? 'You have no API key with this id.' : 'The organization has no API key with this id.');
  }

  /**
   * The customer behind a key, checked like a login: while the client address has too many
   * failures it is refused (429) before any lookup, so a hit cannot be told from a miss; a miss
   * counts one failure. Unlike a login the attempt is counted after the check, not before: a
   * 256-bit key cannot be found by a burst of parallel guesses, and a valid key then costs one
   * read of the limiter, not two writes.
   */
  async authenticate(key: string, clientAddress: string): Promise<CustomerPrincipal> {
    const buckets: FailureBucket[] = [{ key: `api-key:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec: this.env.LOGIN_FAILURE_WINDOW_SEC }];
    await this.limiter.refuseWhileLimited(buckets);
    const found = KEY_FORMAT.test(key) ? await this.store.findByHash(this.hasher.hmac(key)) : null;
    if (!found) {
      await this.limiter.recordFailure(buckets);
      throw new InvalidBearerTokenError('The API key is not valid: unknown or revoked.');
    }
    const { apiKey, emailVerified } = found;
    const now = this.clock.now();
    if (apiKey.needsTouch(now)) await this.store.touch(apiKey.keyId, now, new Date(now.getTime() - LAST_USED_RESOLUTION_MS));
    // Keys never carry admin rights: an administrator's key acts as a customer, on its own devices.
    // An organization's key acts as the organization, whose id the visibility rule takes as an admin of itself.
    return new CustomerPrincipal(apiKey.holder.id, 'customer', emailVerified, null, { keyId: apiKey.keyId, scope: apiKey.scope, holder: apiKey.holder.kind });
  }
}
