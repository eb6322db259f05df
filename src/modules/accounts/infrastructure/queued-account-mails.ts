import { Injectable } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { deliveryQueue, JobQueue } from '../../../shared/jobs/job-queue.js';
import { AccountMailOutbox, SendSignupNotice, SendVerificationMail, SIGNUP_NOTICE_MAIL_QUEUE, VERIFICATION_MAIL_QUEUE, type AccountMailJob } from '../application/account-mails.js';
import type { User } from '../domain/user.js';
import type { TransactionRunner } from '../domain/user.repository.js';

/** The account mails as jobs on the durable queue; this instance also works them. */
@Injectable()
export class QueuedAccountMails extends AccountMailOutbox {
  constructor(
    private readonly jobs: JobQueue,
    env: Env,
    verification: SendVerificationMail,
    notice: SendSignupNotice,
  ) {
    super();
    jobs.define<AccountMailJob>(deliveryQueue(VERIFICATION_MAIL_QUEUE, env), (job) => verification.handle(job), { concurrency: 2 });
    jobs.define<AccountMailJob>(deliveryQueue(SIGNUP_NOTICE_MAIL_QUEUE, env), (job) => notice.handle(job));
  }

  async verification(user: User, tx?: TransactionRunner): Promise<void> {
    await this.jobs.send<AccountMailJob>(VERIFICATION_MAIL_QUEUE, { to: user.email, userId: user.id }, {}, tx);
  }

  async signupNotice(owner: User): Promise<void> {
    await this.jobs.send<AccountMailJob>(SIGNUP_NOTICE_MAIL_QUEUE, { to: owner.email, userId: owner.id });
  }
}
