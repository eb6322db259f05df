import { Global, Module } from '@nestjs/common';
import { Env } from '../../config/env.js';
import { Mailer } from './mailer.js';
import { PublicBaseUrl } from './public-base-url.js';
import { LogMailer, SmtpMailer } from './smtp-mailer.js';

@Global()
@Module({
  providers: [
    { provide: Mailer, inject: [Env], useFactory: (env: Env) => (env.SMTP_URL ? new SmtpMailer(env.SMTP_URL, env.MAIL_FROM) : new LogMailer(env.NODE_ENV === 'development')) },
    PublicBaseUrl,
  ],
  exports: [Mailer, PublicBaseUrl],
})
export class MailModule {}
