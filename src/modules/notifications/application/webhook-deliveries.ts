import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { jobIdFor } from '../../../shared/jobs/job-id.js';
import { deliveryQueue, JobAttemptFailed, JobQueue } from '../../../shared/jobs/job-queue.js';
import { EventDispatch, type DispatchedEvent, type EventChannel } from '../../events/index.js';
import { receives } from '../domain/webhook.js';
import { WebhookStore } from '../domain/webhook.store.js';
import { WebhookSecrets, WebhookTransport } from '../domain/webhook-transport.js';
import { NotificationMails } from './notification-mails.js';

export const WEBHOOK_QUEUE = 'webhook.deliver';

/** One message to one webhook: an event of the log, or a test message. */
export interface WebhookJob {
  webhookId: string;
  /** The URL when it was enqueued: what the failed-deliveries list shows. */
  url: string;
  /** webhook-id: the event's id (evt_…), the same on every retry; msg_… for a test message. */
  messageId: string;
  /** The body, as the Standard Webhooks payload: {type, timestamp, data}. */
  payload: { type: string; timestamp: string; data: Record<string, unknown> };
}

/** The webhook body of an event: `data` is the event as GET /api/v1/dashboard/events shows it. */
export function webhookPayload(event: DispatchedEvent): WebhookJob['payload'] {
  return {
    type: event.type,
    timestamp: event.occurredAt.toISOString(),
    data: { id: event.id, type: event.type, occurredAt: event.occurredAt.toISOString(), deviceId: event.deviceId, data: event.data },
  };
}

/**
 * Webhooks as a channel of the event log, and job `webhook.deliver`: each event goes to the enabled
 * webhooks of the device's owner (and of administrators) that take its type, signed per the
 * Standard Webhooks specification, at least once, retried with backoff (DELIVERY_RETRY_*). A
 * webhook whose deliveries all failed for WEBHOOK_DISABLE_AFTER_SEC is disabled and its owner
 * mailed; what was still queued for it is dropped.
 */
@Injectable()
export class WebhookDeliveries implements EventChannel, OnModuleInit {
  private readonly logger = new Logger('Webhooks');

  constructor(
    private readonly jobs: JobQueue,
    private readonly webhooks: WebhookStore,
    private readonly secrets: WebhookSecrets,
    private readonly transport: WebhookTransport,
    private readonly dispatch: EventDispatch,
    private readonly mails: NotificationMails,
    private readonly clock: Clock,
    private readonly env: Env,
  ) {
    jobs.define<WebhookJob>(deliveryQueue(WEBHOOK_QUEUE, env), (job) => this.deliver(job), { concurrency: 4 });
  }

  onModuleInit(): void {
    this.dispatch.register(this);
  }

  async fanOut(event: DispatchedEvent): Promise<void> {
    for (const webhook of await this.webhooks.recipientsOf(event.ownerId)) {
      if (!receives(webhook, event.type)) continue;
      const job: WebhookJob = { webhookId: webhook.webhookId, url: webhook.url, messageId: event.id, payload: webhookPayload(event) };
      await this.jobs.send(WEBHOOK_QUEUE, job, { id: jobIdFor('webhook', event.id, webhook.webhookId) });
    }
  }

  async deliver(job: WebhookJob): Promise<void> {
    const webhook = await this.webhooks.find(job.webhookId);
    // Deleted or disabled since: nothing to deliver to any more.
    if (!webhook || !webhook.enabled) return;
    const body = JSON.stringify(job.payload);
    const now = this.clock.now();
    const attempt = await this.transport.post(webhook.url, this.secrets.open(webhook.secretSealed), job.messageId, now, body);
    if (attempt.ok) {
      await this.webhooks.markSucceeded(webhook.webhookId);
      return;
    }
    const failingSince = await this.webhooks.markFailed(webhook.webhookId, now);
    if (failingSince && now.getTime() - failingSince.getTime() >= this.env.WEBHOOK_DISABLE_AFTER_SEC * 1000 && (await this.webhooks.disable(webhook.webhookId, now))) {
      this.logger.warn({ webhookId: webhook.webhookId, code: attempt.errorCode }, 'Webhook disabled: every delivery failed for WEBHOOK_DISABLE_AFTER_SEC');
      await this.mails.webhookDisabled(webhook.holder, webhook.webhookId, webhook.url);
    }
    throw new JobAttemptFailed(attempt.errorCode);
  }
}
