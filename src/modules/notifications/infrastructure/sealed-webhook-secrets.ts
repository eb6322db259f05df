import { WebhookSecrets } from '../domain/webhook-transport.js';
import type { SecretBox } from './secret-box.js';
import { newWebhookSecret } from './webhook-http-client.js';

export class SealedWebhookSecrets extends WebhookSecrets {
  constructor(private readonly box: SecretBox) {
    super();
  }

  create(): string {
    return newWebhookSecret();
  }

  seal(secret: string): string {
    return this.box.seal(secret);
  }

  open(sealed: string): string {
    return this.box.open(sealed);
  }
}
