import { Logger } from '@nestjs/common';
import nodemailer, { type Transporter } from 'nodemailer';
import { MailDeliveryFailed, Mailer, type Mail } from './mailer.js';

/** nodemailer's error code (ECONNECTION, ETIMEDOUT, …) or the server's reply code, as SMTP_<…>. */
function deliveryErrorCode(error: unknown): string {
  const { code, responseCode, message } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; responseCode?: unknown; message?: unknown };
  if (typeof responseCode === 'number' && responseCode >= 400 && responseCode < 600) return `SMTP_${responseCode}`;
  // A socket error (code ESOCKET) names the system error only in its message: connect ECONNREFUSED …
  const systemError = typeof message === 'string' ? /\b(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)\b/.exec(message) : null;
  if (systemError) return `SMTP_${systemError[1].slice(1)}`;
  if (typeof code === 'string' && /^E[A-Z]{2,30}$/.test(code)) return `SMTP_${code.slice(1)}`;
  return 'SMTP_FAILED';
}

export class SmtpMailer extends Mailer {
  private readonly logger = new Logger('Mail');
  private readonly transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
  ) {
    super();
    // A server that accepts the connection and then stalls must not hold a worker for minutes
    // (nodemailer waits 2 min to connect and 10 min on a silent socket by default).
    this.transport = nodemailer.createTransport({ url: smtpUrl, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 });
  }

  async send(mail: Mail): Promise<void> {
    try {
      await this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text });
    } catch (error) {
      const code = deliveryErrorCode(error);
      this.logger.warn({ code }, 'SMTP delivery failed; the job queue retries it');
      throw new MailDeliveryFailed(code);
    }
  }
}

/**
 * Without SMTP, in development, the mail goes to the log so a developer can follow the verification
 * link: the one place a token and an address are logged. Under `test` and `production` the log says
 * only that a mail was dropped, since a token or address in a shipped log line is a leak.
 */
export class LogMailer extends Mailer {
  private readonly logger = new Logger('Mail');

  constructor(private readonly withContent: boolean) {
    super();
  }

  async send(mail: Mail): Promise<void> {
    if (this.withContent) this.logger.log({ to: mail.to, subject: mail.subject, text: mail.text }, 'Mail not sent (no SMTP_URL); content follows');
    else this.logger.warn({ subject: mail.subject }, 'Mail not sent: no SMTP_URL');
  }
}
