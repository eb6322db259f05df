import { DomainError } from '../../../shared/domain-error.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends mail: over SMTP when SMTP_URL is set, else into the log for local development. */
export abstract class Mailer {
  abstract send(mail: Mail): Promise<void>;
}

export class MailUnavailableError extends DomainError {
  constructor() {
    super('MAIL_UNAVAILABLE', 'unavailable', 'The mail server could not be reached. Try again later.', { retryAfterSec: 60 });
  }
}
