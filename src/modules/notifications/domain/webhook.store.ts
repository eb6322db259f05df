import type { IntegrationHolder } from '../../../shared/kernel/integration-holder.js';
import type { Webhook } from './webhook.js';

/** Port for webhooks. The abstract class doubles as the injection token. */
export abstract class WebhookStore {
  /** Inserts unless the holder has `max` already; false then. */
  abstract insert(webhook: Webhook, secretSealed: string, max: number): Promise<boolean>;
  abstract listOf(holder: IntegrationHolder): Promise<Webhook[]>;
  abstract find(webhookId: string): Promise<(Webhook & { secretSealed: string }) | null>;
  abstract delete(webhookId: string, holder: IntegrationHolder): Promise<boolean>;
  /**
   * Enabled webhooks for the devices `ownerId` owns: the organization's own (a personal
   * organization's are its account's), and every administrator's.
   */
  abstract recipientsOf(ownerId: string | null): Promise<Webhook[]>;
  abstract markSucceeded(webhookId: string): Promise<void>;
  /** Records a failed delivery; answers since when the webhook has been failing. */
  abstract markFailed(webhookId: string, now: Date): Promise<Date | null>;
  /** Disables it if enabled; true when this call did. */
  abstract disable(webhookId: string, now: Date): Promise<boolean>;
}
