import type { IntegrationHolder } from '../../../shared/kernel/integration-holder.js';

/** A customer's or an organization's webhook endpoint, without its secret. */
export interface Webhook {
  webhookId: string;
  /** An account's webhook receives the events of its personal organization's devices; an organization's, those of the organization's. */
  holder: IntegrationHolder;
  url: string;
  /** Event types it receives; null: every type. */
  types: string[] | null;
  enabled: boolean;
  createdAt: Date;
  failingSince: Date | null;
  disabledAt: Date | null;
}

/** An account, or an organization, may register this many webhooks. */
export const MAX_WEBHOOKS_PER_USER = 10;

export const receives = (webhook: Pick<Webhook, 'enabled' | 'types'>, type: string): boolean => webhook.enabled && (webhook.types === null || webhook.types.includes(type));
