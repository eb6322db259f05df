import type { ApiKeyScope } from '../../../auth/principals.js';
import type { IntegrationHolder } from '../../../shared/kernel/integration-holder.js';

/** Keys an account, or an organization, may hold at once: enough for every integration of a household or an installer, few enough to review. */
export const MAX_API_KEYS_PER_USER = 20;

/**
 * Whose a key is: an account's, acting as that account, or an organization's, acting as the
 * organization (its devices and the shares it holds, by an admin's role) and staying when the
 * member who made it leaves.
 */
export type ApiKeyHolder = IntegrationHolder;

export const API_KEY_NAME_MAX_LENGTH = 100;

/** lastUsedAt is this precise, so a busy key costs one write a minute, not one per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * An account's or an organization's API key, without its secret: the key itself exists only in the
 * answer that created it, and its keyed hash only in storage.
 */
export class ApiKey {
  private constructor(
    readonly keyId: string,
    readonly holder: ApiKeyHolder,
    readonly name: string,
    readonly scope: ApiKeyScope,
    readonly createdAt: Date,
    readonly lastUsedAt: Date | null,
  ) {}

  static create(props: { keyId: string; holder: ApiKeyHolder; name: string; scope: ApiKeyScope; now: Date }): ApiKey {
    return new ApiKey(props.keyId, props.holder, props.name.trim(), props.scope, props.now, null);
  }

  static restore(props: { keyId: string; holder: ApiKeyHolder; name: string; scope: ApiKeyScope; createdAt: Date; lastUsedAt: Date | null }): ApiKey {
    return new ApiKey(props.keyId, props.holder, props.name, props.scope, props.createdAt, props.lastUsedAt);
  }

  /** Whether a use at `now` is worth recording (LAST_USED_RESOLUTION_MS). */
  needsTouch(now: Date): boolean {
    return this.lastUsedAt === null || now.getTime() - this.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS;
  }
}
