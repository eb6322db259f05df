import { OrganizationsService } from '../../src/modules/organizations/index.js';
import { NoOrganizations } from '../fakes/organizations/no-organizations.js';
import { HttpAdapterHost } from '@nestjs/core';
import { JwtService } from '@nestjs/jwt';
import { FixedClock } from '../fakes/config/fixed-clock.js';
import { loadEnv } from '../../src/config/env.js';
import { InMemoryRefreshTokenStore } from '../fakes/shared/in-memory-refresh-token-store.js';
import { SecretHasher } from '../../src/shared/crypto/secret-hasher.js';
import { TEST_HASH_COST } from './hash-cost.js';
import { ChangeFeed } from '../../src/shared/database/change-feed.js';
import { Mailer, type Mail } from '../../src/shared/mail/mailer.js';
import { PublicBaseUrl } from '../../src/shared/mail/public-base-url.js';
import { InMemoryFailureLimiter } from '../../src/shared/rate-limit/failure-limiter.js';
import { RecordingAuditLog } from '../fakes/audit/recording-audit-log.js';
import { TOKEN_ISSUER } from '../../src/modules/devices/application/device-tokens.js';
import { SharingService } from '../../src/modules/sharing/index.js';
import { InMemoryShareStore } from '../fakes/sharing/in-memory-share-store.js';
import { AccountErasure } from '../../src/modules/accounts/application/account-erasure.js';
import { AccountHooks } from '../../src/modules/accounts/application/account-hooks.js';
import { AccountMailOutbox, SendPasswordResetMail, SendSignupNotice, SendVerificationMail, type AccountMailJob } from '../../src/modules/accounts/application/account-mails.js';
import { AccountPasswordService } from '../../src/modules/accounts/application/account-password.service.js';
import { AccountSessionsService } from '../../src/modules/accounts/application/account-sessions.service.js';
import { AccountSignupService } from '../../src/modules/accounts/application/account-signup.service.js';
import { AccountsService } from '../../src/modules/accounts/application/accounts.service.js';
import { CustomerSessions } from '../../src/modules/accounts/application/customer-sessions.js';
import { InMemoryUserRepository } from '../fakes/accounts/in-memory-user-repository.js';
import { PasswordCheck } from '../../src/modules/accounts/application/password-check.js';
import { CUSTOMER_TOKEN_AUDIENCE, UserTokens, type CustomerTokenClaims } from '../../src/modules/accounts/application/user-tokens.js';
import { User } from '../../src/modules/accounts/domain/user.js';
import type { TransactionRunner } from '../../src/modules/accounts/domain/user.repository.js';
import { MemoryCaches } from '../../src/shared/memory/memory-caches.js';

/**
 * The accounts module's services wired as the module wires them, on in-memory stores and a fixed
 * clock, for their unit specs (src/modules/accounts/application/*.spec.ts): a test signs up with
 * one service, logs in with another and checks the account with a third, all on the same state.
 */

export class RecordingMailer extends Mailer {
  readonly sent: Mail[] = [];
  /** While set, every send fails with it and nothing is recorded. */
  failure: Error | null = null;

  async send(mail: Mail): Promise<void> {
    if (this.failure) throw this.failure;
    this.sent.push(mail);
  }

  /** The token of the reset link in the last mail to this address. */
  lastResetTokenTo(to: string): string {
    const mail = this.sent.filter((sent) => sent.to === to).at(-1);
    const match = mail?.text.match(/https:\/\/dash\.example\/reset-password\?token=(\S+)/);
    if (!match?.[1]) throw new Error(`no reset link was mailed to ${to}`);
    return decodeURIComponent(match[1]);
  }

  /** The token of the verification link in the last mail to this address. */
  lastTokenTo(to: string): string {
    const mail = this.sent.filter((sent) => sent.to === to).at(-1);
    const match = mail?.text.match(/https:\/\/dash\.example\/verify-email\?token=(\S+)/);
    if (!match?.[1]) throw new Error(`no verification link was mailed to ${to}`);
    return decodeURIComponent(match[1]);
  }
}

/**
 * The outbox as the job queue would work it, without the queue: each job runs as soon as it is
 * enqueued, unless `hold` is set; then it waits in `held` (a mail server that is down).
 */
export class ImmediateAccountMails extends AccountMailOutbox {
  hold = false;
  readonly held: { queue: string; job: AccountMailJob; tx?: TransactionRunner }[] = [];

  constructor(
    private readonly verificationMail: SendVerificationMail,
    private readonly notice: SendSignupNotice,
    private readonly reset: SendPasswordResetMail,
  ) {
    super();
  }

  async passwordReset(email: string): Promise<void> {
    await this.reset.handle({ to: email });
  }

  async verification(user: User, tx?: TransactionRunner): Promise<void> {
    const job = { to: user.email, userId: user.id };
    if (this.hold) this.held.push({ queue: 'verification', job, tx });
    else await this.verificationMail.handle(job);
  }

  async signupNotice(owner: User): Promise<void> {
    const job = { to: owner.email, userId: owner.id };
    if (this.hold) this.held.push({ queue: 'notice', job });
    else await this.notice.handle(job);
  }

  /** Runs the held jobs, as the queue does once the mail server is back. */
  async release(): Promise<void> {
    this.hold = false;
    for (const { queue, job } of this.held.splice(0)) await (queue === 'verification' ? this.verificationMail.handle(job) : this.notice.handle(job));
  }
}

export const START = new Date('2026-11-21T12:00:00.000Z');
export const ADDRESS = '203.0.113.7';
export const EMAIL = 'ada@example.com';
export const PASSWORD = 'correct horse battery staple';

export function setUpAccounts(envSource: Record<string, string> = {}) {
  const env = loadEnv({ PUBLIC_BASE_URL: 'https://dash.example', ...envSource });
  const clock = new FixedClock(START);
  const refreshTokens = new InMemoryRefreshTokenStore();
  const users = new InMemoryUserRepository(refreshTokens);
  const mailer = new RecordingMailer();
  const hasher = new SecretHasher('p'.repeat(32), TEST_HASH_COST);
  const jwt = new JwtService({ secret: 'c'.repeat(32) });
  const limiter = new InMemoryFailureLimiter(() => clock.now().getTime());
  const tokens = new UserTokens(jwt, env, refreshTokens, hasher);
  const baseUrl = new PublicBaseUrl(env, new HttpAdapterHost());
  const outbox = new ImmediateAccountMails(new SendVerificationMail(users, hasher, mailer, clock, baseUrl), new SendSignupNotice(mailer), new SendPasswordResetMail(users, hasher, mailer, clock, baseUrl));
  const erasure = new AccountErasure();
  const hooks = new AccountHooks();
  // Not connected, the feed is not live: every guard check reads the repository, as it must.
  const customerSessions = new CustomerSessions(users, new ChangeFeed('postgres://unused'), new MemoryCaches(env));
  const sharing = new SharingService(new InMemoryShareStore(), clock, new RecordingAuditLog(), new OrganizationsService(new NoOrganizations(), clock, new RecordingAuditLog()));
  const passwordCheck = new PasswordCheck(hasher, limiter, env);
  const accounts = new AccountsService(users, tokens, hasher, passwordCheck, clock, customerSessions, erasure, hooks);
  const signups = new AccountSignupService(users, outbox, hasher, limiter, clock, env, customerSessions, sharing, hooks);
  const sessions = new AccountSessionsService(users, accounts, tokens, hasher, limiter, passwordCheck, clock, env, customerSessions, sharing, hooks);
  const passwords = new AccountPasswordService(users, accounts, outbox, hasher, limiter, passwordCheck, clock, env, customerSessions);
  const stored = async (userId: string) => {
    const user = await users.findById(userId);
    if (!user) throw new Error(`${userId} is not stored`);
    return user;
  };
  const verifyAccessToken = (token: string) =>
    jwt.verifyAsync<CustomerTokenClaims & { aud: string; iss: string; exp: number; iat: number }>(token, {
      audience: CUSTOMER_TOKEN_AUDIENCE,
      issuer: TOKEN_ISSUER,
      algorithms: ['HS256'],
      // Tokens are issued at the service clock's time.
      clockTimestamp: clock.now().getTime() / 1000,
    });
  /** Signs up from ADDRESS and returns the stored account (the answer names only the address). */
  const signUp = async (email: string, password: string) => {
    await signups.signup(email, password, ADDRESS);
    const user = await users.findByEmail(User.normalizeEmail(email));
    if (!user) throw new Error(`${email} is not stored`);
    return user;
  };
  return { env, clock, users, mailer, outbox, hasher, refreshTokens, erasure, signups, sessions, passwords, accounts, stored, verifyAccessToken, signUp };
}
