/** The outcome of one delivery attempt. `errorCode` is stable UPPER_SNAKE_CASE, fit to store and show. */
export type WebhookAttempt = { ok: true; status: number } | { ok: false; status?: number; errorCode: string };

/** Posts one message to a webhook, signed with its secret per the Standard Webhooks specification. */
export abstract class WebhookTransport {
  /** `messageId` stays the same across retries of the same event, so receivers can drop duplicates. */
  abstract post(url: string, secret: string, messageId: string, at: Date, body: string): Promise<WebhookAttempt>;
}

/** Webhook signing secrets: new ones, sealed for storage, and opened again to sign. */
export abstract class WebhookSecrets {
  abstract create(): string;
  abstract seal(secret: string): string;
  abstract open(sealed: string): string;
}
