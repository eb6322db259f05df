import { Injectable } from '@nestjs/common';
import { CustomerPrincipal } from '../../../auth/principals.js';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { RateLimitedError } from '../../../shared/domain-error.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import { InvalidPasswordResetTokenError } from '../domain/accounts.errors.js';
import { assertGuessResistant } from '../domain/password-policy.js';
import { User } from '../domain/user.js';
import { UserRepository } from '../domain/user.repository.js';
import { AccountMailOutbox } from './account-mails.js';
import { AccountsService } from './accounts.service.js';
import { CustomerSessions } from './customer-sessions.js';
import { PasswordCheck } from './password-check.js';

/** A customer's password: a forgotten one reset through a mailed link, a known one changed. */
@Injectable()
export class AccountPasswordService {
  constructor(
    private readonly users: UserRepository,
    private readonly accounts: AccountsService,
    private readonly mails: AccountMailOutbox,
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly passwordCheck: PasswordCheck,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly sessions: CustomerSessions,
  ) {}

  /**
   * Mails a reset link if the address has an account. The request does the same work either way
   * (the limits, then one job on the queue, whose handler looks the address up), so neither the
   * answer nor its time tells whether the address has an account. Every request counts, sent or
   * not: each may cost a mail, and the per-address limit is also what keeps a stranger from
   * filling someone's mailbox.
   */
  async requestPasswordReset(email: string, clientAddress: string): Promise<void> {
    const normalized = User.normalizeEmail(email);
    const buckets: FailureBucket[] = [
      { key: `password-reset:email:${normalized}`, limit: this.env.PASSWORD_RESET_MAX_PER_EMAIL_PER_HOUR, windowSec: 3600 },
      { key: `password-reset:address:${clientAddress}`, limit: this.env.PASSWORD_RESET_MAX_PER_ADDRESS_PER_HOUR, windowSec: 3600 },
    ];
    const wait = await this.limiter.acquire(buckets);
    if (wait > 0) throw new RateLimitedError('password-reset', wait, 'Too many password resets requested. Try again later.');
    await this.mails.passwordReset(normalized);
  }

  /**
   * Sets a new password with the token of a reset link, and ends every session of the account. An
   * unknown, used or expired token counts against the client address's failure limit; a password
   * the policy refuses does not, and leaves the link usable.
   */
  async resetPassword(token: string, password: string, clientAddress: string): Promise<void> {
    const buckets: FailureBucket[] = [
      { key: `password-reset-confirm:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec: this.env.LOGIN_FAILURE_WINDOW_SEC },
    ];
    const tokenHash = this.hasher.hmac(token);
    const userId = await this.limiter.guard(
      buckets,
      async () => {
        const user = await this.users.findByPasswordResetToken(tokenHash, this.clock.now());
        if (!user) throw new InvalidPasswordResetTokenError();
        assertGuessResistant(password, user.email);
        const passwordHash = await this.hasher.hashLowEntropy(password);
        // Used or replaced while the password was hashed: the one statement that uses it decides.
        const reset = await this.users.resetPassword(tokenHash, passwordHash, this.clock.now());
        if (!reset) throw new InvalidPasswordResetTokenError();
        return reset;
      },
      (error) => error instanceof InvalidPasswordResetTokenError,
    );
    this.sessions.changed(userId);
  }

  /**
   * A new password for a signed-in customer who knows the current one. Every other session ends;
   * the one asking stays signed in. A wrong current password counts as a failed login.
   */
  async changePassword(customer: CustomerPrincipal, currentPassword: string, newPassword: string, clientAddress: string): Promise<void> {
    const user = await this.accounts.getUser(customer.userId);
    assertGuessResistant(newPassword, user.email, 'newPassword');
    await this.passwordCheck.confirm(user, currentPassword, clientAddress);
    await this.users.changePassword(user.id, await this.hasher.hashLowEntropy(newPassword), customer.session?.sid ?? null, this.clock.now());
    this.sessions.changed(user.id);
  }
}
