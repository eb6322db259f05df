import type { ApiKeyScope } from '../../../auth/principals.js';

/** Keys an account may hold at once: enough for every integration of a household or an installer, few enough to review. */
export const MAX_API_KEYS_PER_USER = 20;

export const API_KEY_NAME_MAX_LENGTH = 100;

/** lastUsedAt is this precise, so a busy key costs one write a minute, not one per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * An account's API key, without its secret: the key itself exists only in the answer that created
 * it, and its keyed hash only in storage.
 */
export class ApiKey {
  private constructor(
    readonly keyId: string,
    readonly userId: string,
    readonly name: string,
    readonly scope: ApiKeyScope,
    readonly createdAt: Date,
    readonly lastUsedAt: Date | null,
  ) {}

  static create(props: { keyId: string; userId: string; name: string; scope: ApiKeyScope; now: Date }): ApiKey {
    return new ApiKey(props.keyId, props.userId, props.name.trim(), props.scope, props.now, null);
  }

  static restore(props: { keyId: string; userId: string; name: string; scope: ApiKeyScope; createdAt: Date; lastUsedAt: Date | null }): ApiKey {
    return new ApiKey(props.keyId, props.userId, props.name, props.scope, props.createdAt, props.lastUsedAt);
  }

  /** Whether a use at `now` is worth recording (LAST_USED_RESOLUTION_MS). */
  needsTouch(now: Date): boolean {
    return this.lastUsedAt === null || now.getTime() - this.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS;
  }
}
