import { Injectable } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { deliveryQueue, JobQueue } from '../../../shared/jobs/job-queue.js';
import {
  AccountMailOutbox,
  PASSWORD_RESET_MAIL_QUEUE,
  SendPasswordResetMail,
  SendSignupNotice,
  SendVerificationMail,
  SIGNUP_NOTICE_MAIL_QUEUE,
  VERIFICATION_MAIL_QUEUE,
  type AccountMailJob,
  type PasswordResetMailJob,
} from '../application/account-mails.js';
import type { User } from '../domain/user.js';
import type { TransactionRunner } from '../domain/user.repository.js';

const PASSWORD_RESET_MAIL_DELAY_SEC = 1;

/** The account mails as jobs on the durable queue; this instance also works them. */
@Injectable()
export class QueuedAccountMails extends AccountMailOutbox {
  constructor(
    private readonly jobs: JobQueue,
    env: Env,
    verification: SendVerificationMail,
    notice: SendSignupNotice,
    passwordReset: SendPasswordResetMail,
  ) {
    super();
    jobs.define<AccountMailJob>(deliveryQueue(VERIFICATION_MAIL_QUEUE, env), (job) => verification.handle(job), { concurrency: 2 });
    jobs.define<AccountMailJob>(deliveryQueue(SIGNUP_NOTICE_MAIL_QUEUE, env), (job) => notice.handle(job));
    jobs.define<PasswordResetMailJob>(deliveryQueue(PASSWORD_RESET_MAIL_QUEUE, env), (job) => passwordReset.handle(job), { concurrency: 2 });
  }

  async verification(user: User, tx?: TransactionRunner): Promise<void> {
    await this.jobs.send<AccountMailJob>(VERIFICATION_MAIL_QUEUE, { to: user.email, userId: user.id }, {}, tx);
  }

  async signupNotice(owner: User): Promise<void> {
    await this.jobs.send<AccountMailJob>(SIGNUP_NOTICE_MAIL_QUEUE, { to: owner.email, userId: owner.id });
  }

  /**
   * Due a second later: the worker on this instance would otherwise take the job at once and do
   * an account's mail work (lookups, the token, SMTP) while the request is still answering, making
   * requests for an existing account measurably slower than for an unknown address.
   */
  async passwordReset(email: string): Promise<void> {
    await this.jobs.send<PasswordResetMailJob>(PASSWORD_RESET_MAIL_QUEUE, { to: email }, { startAfterSec: PASSWORD_RESET_MAIL_DELAY_SEC });
  }
}
