import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { DomainError, NotFoundError } from '../../../shared/domain-error.js';
import { jobIdFor } from '../../../shared/jobs/job-id.js';
import { JobQueue } from '../../../shared/jobs/job-queue.js';
import { DEVICE_EVENT_TYPES } from '../../events/index.js';
import { MAX_WEBHOOKS_PER_USER, type Webhook } from '../domain/webhook.js';
import { WebhookStore } from '../domain/webhook.store.js';
import { WebhookTarget } from '../domain/webhook-target.js';
import { WebhookSecrets } from '../domain/webhook-transport.js';
import { WEBHOOK_QUEUE, type WebhookJob } from './webhook-deliveries.js';

export class WebhookDisabledError extends DomainError {
  constructor() {
    super('WEBHOOK_DISABLED', 'conflict', 'This webhook was disabled after failing for too long. Delete it and register it again once the endpoint works.');
  }
}

export class TooManyWebhooksError extends DomainError {
  constructor() {
    super('TOO_MANY_WEBHOOKS', 'conflict', `An account can have at most ${MAX_WEBHOOKS_PER_USER} webhooks. Delete one first.`);
  }
}

/** What a customer does with their webhooks. */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly webhooks: WebhookStore,
    private readonly secrets: WebhookSecrets,
    private readonly jobs: JobQueue,
    private readonly clock: Clock,
    private readonly env: Env,
  ) {}

  /** Registers the endpoint; the answer holds its signing secret, shown this once. */
  async create(userId: string, url: string, types: string[] | null): Promise<{ webhook: Webhook; secret: string }> {
    const target = WebhookTarget.parse(url, { allowPrivateTargets: this.env.WEBHOOK_ALLOW_PRIVATE_TARGETS });
    const webhook: Webhook = {
      webhookId: randomUUID(),
      userId,
      url: target.href,
      types: types === null ? null : [...new Set(types)].sort((a, b) => DEVICE_EVENT_TYPES.indexOf(a as never) - DEVICE_EVENT_TYPES.indexOf(b as never)),
      enabled: true,
      createdAt: this.clock.now(),
      failingSince: null,
      disabledAt: null,
    };
    const secret = this.secrets.create();
    if (!(await this.webhooks.insert(webhook, this.secrets.seal(secret), MAX_WEBHOOKS_PER_USER))) throw new TooManyWebhooksError();
    return { webhook, secret };
  }

  list(userId: string): Promise<Webhook[]> {
    return this.webhooks.listOf(userId);
  }

  async delete(userId: string, webhookId: string): Promise<void> {
    if (!(await this.webhooks.delete(webhookId, userId))) throw new NotFoundError('You have no webhook with this id.');
  }

  /** Queues a `webhook.test` message to it (signed like any delivery); answers the message id. */
  async test(userId: string, webhookId: string): Promise<string> {
    const webhook = await this.webhooks.find(webhookId);
    if (!webhook || webhook.userId !== userId) throw new NotFoundError('You have no webhook with this id.');
    if (!webhook.enabled) throw new WebhookDisabledError();
    const messageId = `msg_${randomUUID().replaceAll('-', '')}`;
    const now = this.clock.now();
    const job: WebhookJob = { webhookId, url: webhook.url, messageId, payload: { type: 'webhook.test', timestamp: now.toISOString(), data: { webhookId } } };
    await this.jobs.send(WEBHOOK_QUEUE, job, { id: jobIdFor('webhook-test', messageId) });
    return messageId;
  }
}
