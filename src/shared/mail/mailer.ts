import { JobAttemptFailed } from '../jobs/job-queue.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Sends one mail now: over SMTP when SMTP_URL is set, else into the log for local development.
 * Only job handlers call it; requests enqueue their mails (src/shared/jobs/job-queue.ts).
 */
export abstract class Mailer {
  abstract send(mail: Mail): Promise<void>;
}

/** The SMTP server did not take the mail; `code` says why (SMTP_CONNECTION, SMTP_TIMEOUT, SMTP_550, …). */
export class MailDeliveryFailed extends JobAttemptFailed {}
