import { Logger } from '@nestjs/common';
import nodemailer, { type Transporter } from 'nodemailer';
import { MailUnavailableError, Mailer, type Mail } from '../application/mailer.js';

export class SmtpMailer extends Mailer {
  private readonly logger = new Logger('Mail');
  private readonly transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
  ) {
    super();
    this.transport = nodemailer.createTransport(smtpUrl);
  }

  async send(mail: Mail): Promise<void> {
    try {
      await this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text });
    } catch (error) {
      this.logger.warn({ code: (error as { code?: unknown }).code }, 'SMTP delivery failed');
      throw new MailUnavailableError();
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
