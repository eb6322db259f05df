import { Injectable } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import { WrongPasswordError } from '../domain/accounts.errors.js';
import type { User } from '../domain/user.js';

/**
 * A login, a password change and an account's deletion check a password alike: a wrong one counts
 * against the same limits, per address asked for and per client address.
 */
@Injectable()
export class PasswordCheck {
  constructor(
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly env: Env,
  ) {}

  /** The account's password, checked as a login is: a wrong one counts against the same limits. */
  async confirm(user: User, password: string, clientAddress: string): Promise<void> {
    await this.limiter.guard(
      this.buckets(user.email, clientAddress),
      async () => {
        if (!(await this.hasher.verifyLowEntropy(password, user.passwordHash))) throw new WrongPasswordError();
      },
      (error) => error instanceof WrongPasswordError,
    );
  }

  buckets(email: string, clientAddress: string): FailureBucket[] {
    const windowSec = this.env.LOGIN_FAILURE_WINDOW_SEC;
    return [
      { key: `user-login:email:${email}`, limit: this.env.LOGIN_MAX_FAILURES_PER_DEVICE, windowSec },
      { key: `user-login:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec },
    ];
  }
}
