import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { Mailer } from '../../../shared/mail/mailer.js';
import { PublicBaseUrl } from '../../../shared/mail/public-base-url.js';
import type { User } from '../domain/user.js';
import { UserRepository, type TransactionRunner } from '../domain/user.repository.js';

export const VERIFICATION_MAIL_QUEUE = 'mail.verification';
export const SIGNUP_NOTICE_MAIL_QUEUE = 'mail.signup-notice';
export const PASSWORD_RESET_MAIL_QUEUE = 'mail.password-reset';

const VERIFICATION_TTL_MS = 24 * 3600 * 1000;
export const PASSWORD_RESET_TTL_MS = 3600 * 1000;

/** Where a reset link leads: the dashboard's page, which reads `token` and calls the confirm operation. */
export const PASSWORD_RESET_PAGE_PATH = '/reset-password';

/** What a mail job holds: the recipient and their account, never the content or a token. */
export interface AccountMailJob {
  to: string;
  userId: string;
}

/**
 * What a reset mail job holds: the address as it was asked for, whether or not an account has it.
 * The request enqueues the same job either way and never looks; the handler does.
 */
export interface PasswordResetMailJob {
  to: string;
}

/**
 * Where the account services leave the mails they owe. In the service they are jobs on the durable queue
 * (infrastructure/queued-account-mails.ts), sent by the handlers below, retried while SMTP is down:
 * no request waits for a mail server.
 */
export abstract class AccountMailOutbox {
  /** With `tx`, the job is written in that transaction (the sign-up's). */
  abstract verification(user: User, tx?: TransactionRunner): Promise<void>;
  abstract signupNotice(owner: User): Promise<void>;
  abstract passwordReset(email: string): Promise<void>;
}

/**
 * Job `mail.verification`: mints the link's token when the mail goes out, so no usable token is
 * ever stored (only its HMAC). A retry mints another; an earlier one that never arrived expires
 * unused. An account verified meanwhile gets no mail.
 */
@Injectable()
export class SendVerificationMail {
  constructor(
    private readonly users: UserRepository,
    private readonly hasher: SecretHasher,
    private readonly mailer: Mailer,
    private readonly clock: Clock,
    private readonly baseUrl: PublicBaseUrl,
  ) {}

  async handle(job: AccountMailJob): Promise<void> {
    const user = await this.users.findById(job.userId);
    if (!user || user.emailVerified || user.email !== job.to) return;
    const token = SecretHasher.randomToken();
    const now = this.clock.now();
    await this.users.insertVerificationToken({ userId: user.id, tokenHash: this.hasher.hmac(token), expiresAt: new Date(now.getTime() + VERIFICATION_TTL_MS) });
    const link = `${this.baseUrl.get()}/verify-email?token=${encodeURIComponent(token)}`;
    await this.mailer.send({
      to: user.email,
      subject: 'Confirm your e-mail address',
      text: `Confirm your e-mail address for Device Cloud by opening this link within 24 hours:\n\n${link}\n\nIf you did not sign up, ignore this message.`,
    });
  }
}

/** Job `mail.signup-notice`: tells the owner of a taken address that someone tried to sign up with it. */
@Injectable()
export class SendSignupNotice {
  constructor(private readonly mailer: Mailer) {}

  async handle(job: AccountMailJob): Promise<void> {
    await this.mailer.send({
      to: job.to,
      subject: 'Someone tried to sign up with your e-mail address',
      text:
        'Someone just tried to create a Device Cloud account with this e-mail address, which already has one. ' +
        'Nothing was changed: your account, its password and its devices are as they were.\n\n' +
        'If it was you, sign in with your existing password instead. If it was not you, you can ignore this message.',
    });
  }
}

/**
 * Job `mail.password-reset`: an address without an account gets nothing. Otherwise the link's token
 * is minted now, as for the verification mail (only its HMAC is stored), and replaces the account's
 * earlier links: only the newest mail works. A retry mints another, so an earlier attempt whose
 * mail did arrive after all stops working.
 */
@Injectable()
export class SendPasswordResetMail {
  constructor(
    private readonly users: UserRepository,
    private readonly hasher: SecretHasher,
    private readonly mailer: Mailer,
    private readonly clock: Clock,
    private readonly baseUrl: PublicBaseUrl,
  ) {}

  async handle(job: PasswordResetMailJob): Promise<void> {
    const user = await this.users.findByEmail(job.to);
    if (!user) return;
    const token = SecretHasher.randomToken();
    const link = `${this.baseUrl.get()}${PASSWORD_RESET_PAGE_PATH}?token=${encodeURIComponent(token)}`;
    await this.users.replacePasswordResetToken({ userId: user.id, tokenHash: this.hasher.hmac(token), expiresAt: new Date(this.clock.now().getTime() + PASSWORD_RESET_TTL_MS) });
    await this.mailer.send({
      to: user.email,
      subject: 'Reset your Device Cloud password',
      text:
        `Someone asked to reset the password of your Device Cloud account. To choose a new one, open this link within an hour:\n\n${link}\n\n` +
        'The link works once, and only the newest one you asked for works. Setting a new password signs you out everywhere.\n\n' +
        'If you did not ask for this, ignore this message: your password stays as it is.',
    });
  }
}
