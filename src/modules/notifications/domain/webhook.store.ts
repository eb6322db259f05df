import type { Webhook } from './webhook.js';

/** Port for webhooks. The abstract class doubles as the injection token. */
export abstract class WebhookStore {
  /** Inserts unless the user has MAX_WEBHOOKS_PER_USER already; false then. */
  abstract insert(webhook: Webhook, secretSealed: string, max: number): Promise<boolean>;
  abstract listOf(userId: string): Promise<Webhook[]>;
  abstract find(webhookId: string): Promise<(Webhook & { secretSealed: string }) | null>;
  abstract delete(webhookId: string, userId: string): Promise<boolean>;
  /** Enabled webhooks of `ownerId` and of every administrator. */
  abstract recipientsOf(ownerId: string | null): Promise<Webhook[]>;
  abstract markSucceeded(webhookId: string): Promise<void>;
  /** Records a failed delivery; answers since when the webhook has been failing. */
  abstract markFailed(webhookId: string, now: Date): Promise<Date | null>;
  /** Disables it if enabled; true when this call did. */
  abstract disable(webhookId: string, now: Date): Promise<boolean>;
}
