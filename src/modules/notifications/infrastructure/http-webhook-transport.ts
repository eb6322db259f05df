import type { WebhookAttempt } from '../domain/webhook-transport.js';
import { WebhookTransport } from '../domain/webhook-transport.js';
import { signWebhook, type WebhookHttpClient } from './webhook-http-client.js';

export class HttpWebhookTransport extends WebhookTransport {
  constructor(private readonly client: WebhookHttpClient) {
    super();
  }

  post(url: string, secret: string, messageId: string, at: Date, body: string): Promise<WebhookAttempt> {
    return this.client.post(url, signWebhook(secret, messageId, at, body), body);
  }
}
