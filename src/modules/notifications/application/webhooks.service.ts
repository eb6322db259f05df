import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { DomainError, NotFoundError } from '../../../shared/domain-error.js';
import { jobIdFor } from '../../../shared/jobs/job-id.js';
import { JobQueue } from '../../../shared/jobs/job-queue.js';
import { DEVICE_EVENT_TYPES } from '../../events/index.js';
import { sameHolder, type IntegrationHolder } from '../../../shared/kernel/integration-holder.js';
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
    super('TOO_MANY_WEBHOOKS', 'conflict', `An account, or an organization, can have at most ${MAX_WEBHOOKS_PER_USER} webhooks. Delete one first.`);
  }
}

const noWebhook = (holder: IntegrationHolder) => new NotFoundError(holder.kind === 'user' ? 'You have no webhook with this id.' : 'The organization has no webhook with this id.');

/** What a customer does with their webhooks, and an organization's owners and admins with the organization's. */
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
  async create(holder: IntegrationHolder, url: string, types: string[] | null): Promise<{ webhook: Webhook; secret: string }> {
    const target = WebhookTarget.parse(url, { allowPrivateTargets: this.env.WEBHOOK_ALLOW_PRIVATE_TARGETS });
    const webhook: Webhook = {
      webhookId: randomUUID(),
      holder,
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

  list(holder: IntegrationHolder): Promise<Webhook[]> {
    return this.webhooks.listOf(holder);
  }

  async delete(holder: IntegrationHolder, webhookId: string): Promise<void> {
    if (!(await this.webhooks.delete(webhookId, holder))) throw noWebhook(holder);
  }

  /** Queues a `webhook.test` message to it (signed like any delivery); answers the message id. */
  async test(holder: IntegrationHolder, webhookId: string): Promise<string> {
    const webhook = await this.webhooks.find(webhookId);
    if (!webhook || !sameHolder(webhook.holder, holder)) throw noWebhook(holder);
    if (!webhook.enabled) throw new WebhookDisabledError();
    const messageId = `msg_${randomUUID().replaceAll('-', '')}`;
    const now = this.clock.now();
    const job: WebhookJob = { webhookId, url: webhook.url, messageId, payload: { type: 'webhook.test', timestamp: now.toISOString(), data: { webhookId } } };
    await this.jobs.send(WEBHOOK_QUEUE, job, { id: jobIdFor('webhook-test', messageId) });
    return messageId;
  }
}
