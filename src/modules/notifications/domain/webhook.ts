/** A customer's webhook endpoint, without its secret. */
export interface Webhook {
  webhookId: string;
  userId: string;
  url: string;
  /** Event types it receives; null: every type. */
  types: string[] | null;
  enabled: boolean;
  createdAt: Date;
  failingSince: Date | null;
  disabledAt: Date | null;
}

/** A customer may register this many webhooks. */
export const MAX_WEBHOOKS_PER_USER = 10;

export const receives = (webhook: Pick<Webhook, 'enabled' | 'types'>, type: string): boolean => webhook.enabled && (webhook.types === null || webhook.types.includes(type));
