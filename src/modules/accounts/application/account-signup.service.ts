import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { RateLimitedError } from '../../../shared/domain-error.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import { InvalidVerificationTokenError } from '../domain/accounts.errors.js';
import { assertGuessResistant } from '../domain/password-policy.js';
import { User } from '../domain/user.js';
import { UserRepository } from '../domain/user.repository.js';
import { AccountMailOutbox } from './account-mails.js';
import { CustomerSessions } from './customer-sessions.js';
import { SharingService } from '../../sharing/index.js';
import { AccountHooks } from './account-hooks.js';

/** A customer's sign-up and the verification of their e-mail address. */
@Injectable()
export class AccountSignupService {
  constructor(
    private readonly users: UserRepository,
    private readonly mails: AccountMailOutbox,
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly sessions: CustomerSessions,
    private readonly sharing: SharingService,
    private readonly hooks: AccountHooks,
  ) {}

  /**
   * Creates an unverified account and mails a verification link. An address that already has an
   * account gets the same answer (ASVS 6.3.8: no enumeration through signup); its owner is told by
   * mail instead. Either way the password is hashed, so both take as long.
   */
  async signup(email: string, password: string, clientAddress: string): Promise<{ email: string }> {
    const normalized = User.normalizeEmail(email);
    assertGuessResistant(password, normalized);
    // A budget, not a credential check: while Redis does not answer, sign-ups go on unlimited.
    const wait = await this.limiter.tryAcquire([{ key: `signup:address:${clientAddress}`, limit: this.env.SIGNUP_MAX_PER_ADDRESS_PER_HOUR, windowSec: 3600 }]);
    if (wait !== null && wait > 0) throw new RateLimitedError('signup', wait, 'Too many sign-ups from this address. Try again later.');
    const now = this.clock.now();
    const user = User.create({ id: randomUUID(), email: normalized, passwordHash: await this.hasher.hashLowEntropy(password), role: 'customer', verified: false, now });
    // The verification mail's job commits with the account: no account without its mail.
    const created = await this.users.insertIfEmailFree(user, async (tx) => {
      await this.mails.verification(user, tx);
      await this.hooks.created(tx, { userId: user.id, email: user.email, at: now });
    });
    if (!created) await this.sendSignupNotice(normalized);
    return { email: normalized };
  }

  async verifyEmail(token: string): Promise<User> {
    const now = this.clock.now();
    const userId = await this.users.consumeVerificationToken(this.hasher.hmac(token), now);
    const user = userId ? await this.users.findById(userId) : null;
    if (!user) throw new InvalidVerificationTokenError();
    user.verifyEmail(now);
    await this.users.save(user);
    this.sessions.changed(user.id);
    // Shares waiting for this address start to count now (and again at each login, should this fail).
    await this.sharing.bindVerified(user.id, user.email);
    await this.hooks.verified(user.id, user.email);
    return user;
  }

  /** Sends a new link; limited per account, since each call sends a mail. Verified accounts get none. */
  async resendVerification(userId: string): Promise<void> {
    const buckets: FailureBucket[] = [{ key: `resend:user:${userId}`, limit: this.env.RESEND_VERIFICATION_MAX_PER_HOUR, windowSec: 3600 }];
    // Every request counts, sent or not: each may cost a mail.
    const wait = await this.limiter.acquire(buckets);
    if (wait > 0) throw new RateLimitedError('resend', wait, 'Too many verification mails requested. Try again later.');
    const user = await this.users.findById(userId);
    if (!user || user.emailVerified) return;
    await this.mails.verification(user);
  }

  /** Tells the owner of a taken address that someone tried to sign up with it; at most one mail an hour. */
  private async sendSignupNotice(email: string): Promise<void> {
    const owner = await this.users.findByEmail(email);
    if (!owner) return;
    if ((await this.limiter.tryAcquire([{ key: `signup-notice:user:${owner.id}`, limit: 1, windowSec: 3600 }])) !== 0) return;
    await this.mails.signupNotice(owner);
  }
}
