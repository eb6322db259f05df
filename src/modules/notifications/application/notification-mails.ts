import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { deliveryQueue, JobQueue } from '../../../shared/jobs/job-queue.js';
import { Mailer } from '../../../shared/mail/mailer.js';
import { PublicBaseUrl } from '../../../shared/mail/public-base-url.js';
import type { IntegrationHolder } from '../../../shared/kernel/integration-holder.js';
import { AccountsService } from '../../accounts/index.js';
import { OrganizationsService } from '../../organizations/index.js';
import { EventDispatch, type DispatchedEvent, type EventChannel } from '../../events/index.js';
import { PendingNotificationStore, type NotifiedEvent } from '../domain/pending-notification.store.js';

export const ALERT_DIGEST_QUEUE = 'mail.alert-digest';
export const WEBHOOK_DISABLED_MAIL_QUEUE = 'mail.webhook-disabled';

/** The events an owner is mailed about (unless they turned alert e-mails off). */
export const MAILED_EVENT_TYPES = new Set(['alert.opened', 'alert.resolved', 'device.offline', 'ota.failed']);

/** A digest comes at most this often per owner; what happens meanwhile waits for the next one. */
const DIGEST_EVERY_SEC = 60;

export interface AlertDigestJob {
  userId: string;
  to: string;
}

export interface WebhookDisabledMailJob {
  userId: string;
  to: string;
  webhookId: string;
  url: string;
}

/** 86400 → "24 hours", 90 → "2 minutes", 10 → "10 seconds". */
function duration(seconds: number): string {
  const [amount, unit] = seconds >= 7200 ? [Math.round(seconds / 3600), 'hour'] : seconds >= 120 ? [Math.round(seconds / 60), 'minute'] : [seconds, 'second'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'}`;
}

function describe(event: NotifiedEvent): string {
  const data = event.data as Record<string, string | number | null | undefined>;
  const at = event.occurredAt.toISOString();
  switch (event.type) {
    case 'alert.opened':
      return `${at}  ${event.deviceId} battery ${data.batteryId}: ${data.metric} ${data.op} ${data.threshold} (now ${data.value}) — alert opened [${data.ruleId}]`;
    case 'alert.resolved':
      return data.reason === 'rule_removed'
        ? `${at}  ${event.deviceId} battery ${data.batteryId}: ${data.metric} alert closed, its rule was removed [${data.ruleId}]`
        : `${at}  ${event.deviceId} battery ${data.batteryId}: ${data.metric} back to ${data.value} — alert resolved [${data.ruleId}]`;
    case 'device.offline':
      return `${at}  ${event.deviceId}: offline, no telemetry since ${data.lastTelemetryAt}`;
    case 'ota.failed':
      return `${at}  ${event.deviceId}: update ${data.fromVersion ?? '?'} → ${data.toVersion ?? '?'} failed (${data.report}${data.errorCode ? `, ${data.errorCode}` : ''})`;
    default:
      return `${at}  ${event.deviceId}: ${event.type}`;
  }
}

/**
 * E-mail as a channel of the event log: alerts opened and resolved, devices gone offline and failed
 * updates, to the owner organization's owners, admins and operators (a personal organization: its
 * account) whose account has a verified address with alert e-mails on. Each event is mailed
 * once; the events of one owner are gathered into one digest a minute at most (one job per
 * minute of the service's clock), so a burst over many devices is one mail, not dozens.
 */
@Injectable()
export class NotificationMails implements EventChannel, OnModuleInit {
  constructor(
    private readonly jobs: JobQueue,
    private readonly pending: PendingNotificationStore,
    private readonly accounts: AccountsService,
    private readonly mailer: Mailer,
    private readonly dispatch: EventDispatch,
    private readonly env: Env,
    private readonly baseUrl: PublicBaseUrl,
    private readonly organizations: OrganizationsService,
  ) {
    jobs.define<AlertDigestJob>(deliveryQueue(ALERT_DIGEST_QUEUE, env), (job) => this.sendDigest(job));
    jobs.define<WebhookDisabledMailJob>(deliveryQueue(WEBHOOK_DISABLED_MAIL_QUEUE, env), (job) => this.sendWebhookDisabled(job));
  }

  onModuleInit(): void {
    this.dispatch.register(this);
  }

  async fanOut(event: DispatchedEvent): Promise<void> {
    if (!MAILED_EVENT_TYPES.has(event.type) || event.ownerId === null) return;
    // The owner organization's owners, admins and operators (a personal organization: its account).
    for (const userId of await this.organizations.alertedAccountsOf(event.ownerId)) {
      const recipient = await this.accounts.alertRecipient(userId);
      if (!recipient) continue;
      await this.pending.add(userId, event.id);
      await this.jobs.send<AlertDigestJob>(ALERT_DIGEST_QUEUE, { userId, to: recipient.email }, { oncePer: { key: userId, seconds: DIGEST_EVERY_SEC } });
    }
  }

  /** An account's webhook: mail the account; an organization's: mail its owners and admins. */
  async webhookDisabled(holder: IntegrationHolder, webhookId: string, url: string): Promise<void> {
    const accounts = holder.kind === 'user' ? [holder.id] : await this.organizations.administratorAccountsOf(holder.id);
    for (const userId of accounts) {
      const to = await this.accounts.verifiedAddress(userId);
      if (to) await this.jobs.send<WebhookDisabledMailJob>(WEBHOOK_DISABLED_MAIL_QUEUE, { userId, to, webhookId, url });
    }
  }

  /** Job `mail.alert-digest`: everything waiting for the owner, in one mail. */
  async sendDigest(job: AlertDigestJob): Promise<void> {
    await this.pending.drain(job.userId, async (events) => {
      const recipient = await this.accounts.alertRecipient(job.userId);
      // Turned off (or the address changed) since: the waiting events are dropped, not mailed.
      if (!recipient) return;
      const subject = events.length === 1 ? `Device Cloud: ${describe(events[0]).replace(/^\S+\s+/, '')}` : `Device Cloud: ${events.length} notifications about your devices`;
      const text = [
        events.length === 1 ? 'This happened to one of your devices:' : `These ${events.length} things happened to your devices:`,
        '',
        ...events.map(describe),
        '',
        `Turn these e-mails off with PATCH ${this.baseUrl.get()}/api/v1/users/me {"alertEmails": false}.`,
      ].join('\n');
      await this.mailer.send({ to: recipient.email, subject: subject.slice(0, 200), text });
    });
  }

  /** Job `mail.webhook-disabled`. */
  async sendWebhookDisabled(job: WebhookDisabledMailJob): Promise<void> {
    const origin = (() => {
      try {
        return new URL(job.url).origin;
      } catch {
        return 'your endpoint';
      }
    })();
    await this.mailer.send({
      to: job.to,
      subject: 'Device Cloud: a webhook of yours was disabled',
      text:
        `Every delivery to your webhook ${job.webhookId} (${origin}) failed for ${duration(this.env.WEBHOOK_DISABLE_AFTER_SEC)}, so it was disabled and gets no more events.\n\n` +
        'Fix the endpoint, then delete the disabled webhook (DELETE /api/v1/user/webhooks/{webhookId}; it still counts towards your 10) and register it again with POST /api/v1/user/webhooks.',
    });
  }
}
