import { Injectable } from '@nestjs/common';
import { CustomerPrincipal, type CustomerAuthenticator } from '../../../auth/principals.js';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { UnauthorizedError } from '../../../shared/domain-error.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import type { TokenPair } from '../../../shared/auth-tokens/access-tokens.js';
import { InvalidRefreshTokenError } from '../../../shared/auth-tokens/refresh-tokens.js';
import { InvalidLoginError } from '../domain/accounts.errors.js';
import { User } from '../domain/user.js';
import { UserRepository } from '../domain/user.repository.js';
import { AccountsService } from './accounts.service.js';
import { CustomerSessions } from './customer-sessions.js';
import { PasswordCheck } from './password-check.js';
import { UserTokens, type CustomerTokenClaims } from './user-tokens.js';
import { SharingService } from '../../sharing/index.js';
import { AccountHooks } from './account-hooks.js';

/** A customer's sessions: logging in, refreshing and ending them, and the guard's check of an access token. */
@Injectable()
export class AccountSessionsService implements CustomerAuthenticator {
  constructor(
    private readonly users: UserRepository,
    private readonly accounts: AccountsService,
    private readonly tokens: UserTokens,
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly passwordCheck: PasswordCheck,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly sessions: CustomerSessions,
    private readonly sharing: SharingService,
    private readonly hooks: AccountHooks,
  ) {}

  async login(email: string, password: string, clientAddress: string): Promise<TokenPair> {
    const normalized = User.normalizeEmail(email);
    return this.limiter.guard(this.passwordCheck.buckets(normalized, clientAddress), async () => {
      const user = await this.users.findByEmail(normalized);
      // argon2 runs for unknown e-mails too (on a dummy hash), so both failures take as long.
      const passwordMatches = await this.hasher.verifyLowEntropy(password, user?.passwordHash);
      if (!user || !passwordMatches) throw new InvalidLoginError();
      // A hash made with older parameters (ARGON2_OPTIONS) is replaced now that the password is known.
      if (this.hasher.needsRehash(user.passwordHash)) await this.users.replacePasswordHash(user.id, user.passwordHash, await this.hasher.hashLowEntropy(password));
      if (user.emailVerified) {
        await this.sharing.bindVerified(user.id, user.email);
        await this.hooks.verified(user.id, user.email);
      }
      return this.tokens.issue(user, this.clock.now());
    });
  }

  async refresh(refreshToken: string, clientAddress: string): Promise<TokenPair> {
    const buckets: FailureBucket[] = [
      { key: `user-refresh:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec: this.env.LOGIN_FAILURE_WINDOW_SEC },
    ];
    const now = this.clock.now();
    const rotated = await this.limiter.guard(buckets, () =>
      this.tokens.rotate(refreshToken, now, {
        currentTokenVersion: async (id) => (await this.users.findById(id))?.tokenVersion ?? null,
        revokeAllTokens: (id) => this.revokeAllTokens(id),
      }),
    );
    const user = await this.accounts.getUser(rotated.subjectId);
    // The same token presented elsewhere at once voided every token meanwhile: no successor.
    if (user.tokenVersion !== rotated.tokenVersion) throw new InvalidRefreshTokenError();
    return this.tokens.pairOf(rotated, user.role);
  }

  /** Ends the session of the refresh token: its refresh tokens, and its access tokens at once (their `sid`). */
  async logout(refreshToken: string): Promise<void> {
    await this.tokens.revokeSession(refreshToken, this.clock.now());
  }

  /** Every customer-token request: the account and whether the token's session is live, in one read. */
  async authenticate(claims: Pick<CustomerTokenClaims, 'sub' | 'tv' | 'sid'>): Promise<CustomerPrincipal> {
    const account = await this.sessions.find(claims.sub, claims.sid);
    if (!account || account.tokenVersion !== claims.tv) throw new UnauthorizedError('The token was revoked.');
    return new CustomerPrincipal(account.userId, account.role, account.emailVerified, { sub: claims.sub, tv: claims.tv, sid: claims.sid });
  }

  private async revokeAllTokens(userId: string): Promise<void> {
    const user = await this.users.findById(userId);
    if (!user) return;
    user.revokeTokens();
    await this.users.save(user);
    this.sessions.changed(userId);
  }
}
