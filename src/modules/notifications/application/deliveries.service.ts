import { Injectable } from '@nestjs/common';
import { JobQueue, type FailedJob } from '../../../shared/jobs/job-queue.js';

export type DeliveryChannel = 'email' | 'webhook';

export interface FailedDelivery {
  deliveryId: string;
  channel: DeliveryChannel;
  /** The job's queue, e.g. `mail.verification`: what was being delivered. */
  kind: string;
  /** The recipient's address, or the webhook's URL without its query string. */
  target: string;
  attempts: number;
  lastErrorCode: string;
  createdAt: Date;
  failedAt: Date;
}

/** What every delivery job holds about where it goes (the rest of its data is never shown). */
interface DeliveryJobData {
  to?: unknown;
  url?: unknown;
}

function describe(job: FailedJob<DeliveryJobData>): FailedDelivery {
  const channel: DeliveryChannel = job.queue.startsWith('webhook.') ? 'webhook' : 'email';
  const target = channel === 'webhook' ? String(job.data.url ?? '').split('?')[0] : String(job.data.to ?? '');
  return { deliveryId: job.id, channel, kind: job.queue, target, attempts: job.attempts, lastErrorCode: job.lastErrorCode, createdAt: job.createdAt, failedAt: job.failedAt };
}

/** The deliveries (mails, webhook calls) that ran out of retries, for an administrator. */
@Injectable()
export class DeliveriesService {
  constructor(private readonly jobs: JobQueue) {}

  async failed(page: { limit: number; after?: string }): Promise<FailedDelivery[]> {
    return (await this.jobs.failedDeliveries<DeliveryJobData>(page)).map(describe);
  }
}
