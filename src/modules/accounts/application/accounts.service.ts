import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { CustomerPrincipal, type CustomerAuthenticator } from '../../../auth/principals.js';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { RateLimitedError, UnauthorizedError } from '../../../shared/domain-error.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import type { TokenPair } from '../../../shared/auth-tokens/access-tokens.js';
import { AdministratorNotDeletableError, InvalidLoginError, InvalidPasswordResetTokenError, InvalidVerificationTokenError, WrongPasswordError } from '../domain/accounts.errors.js';
import { assertGuessResistant } from '../domain/password-policy.js';
import { User } from '../domain/user.js';
import { InvalidRefreshTokenError } from '../../../shared/auth-tokens/refresh-tokens.js';
import { UserRepository } from '../domain/user.repository.js';
import { AccountErasure } from './account-erasure.js';
import { AccountMailOutbox } from './account-mails.js';
import { CustomerSessions } from './customer-sessions.js';
import { UserTokens, type CustomerTokenClaims } from './user-tokens.js';
import { SharingService } from '../../sharing/index.js';

@Injectable()
export class AccountsService implements CustomerAuthenticator {
  private readonly logger = new Logger(AccountsService.name);

  constructor(
    private readonly users: UserRepository,
    private readonly tokens: UserTokens,
    private readonly mails: AccountMailOutbox,
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly sessions: CustomerSessions,
    private readonly erasure: AccountErasure,
    private readonly sharing: SharingService,
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
    const created = await this.users.insertIfEmailFree(user, (tx) => this.mails.verification(user, tx));
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

  async login(email: string, password: string, clientAddress: string): Promise<TokenPair> {
    const normalized = User.normalizeEmail(email);
    return this.limiter.guard(this.loginBuckets(normalized, clientAddress), async () => {
      const user = await this.users.findByEmail(normalized);
      // argon2 runs for unknown e-mails too (on a dummy hash), so both failures take as long.
      const passwordMatches = await this.hasher.verifyLowEntropy(password, user?.passwordHash);
      if (!user || !passwordMatches) throw new InvalidLoginError();
      // A hash made with older parameters (ARGON2_OPTIONS) is replaced now that the password is known.
      if (this.hasher.needsRehash(user.passwordHash)) await this.users.replacePasswordHash(user.id, user.passwordHash, await this.hasher.hashLowEntropy(password));
      if (user.emailVerified) await this.sharing.bindVerified(user.id, user.email);
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
    const user = await this.getUser(rotated.subjectId);
    // The same token presented elsewhere at once voided every token meanwhile: no successor.
    if (user.tokenVersion !== rotated.tokenVersion) throw new InvalidRefreshTokenError();
    return this.tokens.pairOf(rotated, user.role);
  }

  /** Ends the session of the refresh token: its refresh tokens, and its access tokens at once (their `sid`). */
  async logout(refreshToken: string): Promise<void> {
    await this.tokens.revokeSession(refreshToken, this.clock.now());
  }

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
    const user = await this.getUser(customer.userId);
    assertGuessResistant(newPassword, user.email, 'newPassword');
    await this.confirmPassword(user, currentPassword, clientAddress);
    await this.users.changePassword(user.id, await this.hasher.hashLowEntropy(newPassword), customer.session?.sid ?? null, this.clock.now());
    this.sessions.changed(user.id);
  }

  /**
   * Deletes the account: in one transaction, every module's erasure step (its devices released,
   * with their events and audit rows) and then the account's row, which takes its sessions, links,
   * webhooks and pending notifications along. Telemetry stays with the devices.
   */
  async deleteAccount(customer: CustomerPrincipal, password: string, clientAddress: string): Promise<void> {
    const user = await this.getUser(customer.userId);
    if (user.isAdmin) throw new AdministratorNotDeletableError();
    await this.confirmPassword(user, password, clientAddress);
    const account = { userId: user.id, clientAddress, at: this.clock.now() };
    await this.users.deleteAccount(user.id, (tx) => this.erasure.runIn(tx, account));
    this.sessions.changed(user.id);
    this.logger.log({ userId: user.id }, 'Account deleted by its owner');
  }

  async setAlertEmails(userId: string, on: boolean): Promise<User> {
    const user = await this.getUser(userId);
    user.setAlertEmails(on);
    await this.users.save(user);
    return user;
  }

  /** Where notifications about a user's devices go: a verified address that wants them, else null. */
  async alertRecipient(userId: string): Promise<{ email: string } | null> {
    const user = await this.users.findById(userId);
    return user && user.emailVerified && user.alertEmails ? { email: user.email } : null;
  }

  /** The verified address of an account, for mails it must get (a webhook of theirs was disabled). */
  async verifiedAddress(userId: string): Promise<string | null> {
    const user = await this.users.findById(userId);
    return user && user.emailVerified ? user.email : null;
  }

  /** The account with this address (normalised as at sign-up), for an administrator's transfer; null when there is none. */
  async accountByEmail(email: string): Promise<{ userId: string; emailVerified: boolean } | null> {
    const user = await this.users.findByEmail(User.normalizeEmail(email));
    return user ? { userId: user.id, emailVerified: user.emailVerified } : null;
  }

  async getUser(userId: string): Promise<User> {
    const user = await this.users.findById(userId);
    if (!user) throw new UnauthorizedError('The account no longer exists.');
    return user;
  }

  /** Every customer-token request: the account and whether the token's session is live, in one read. */
  async authenticate(claims: Pick<CustomerTokenClaims, 'sub' | 'tv' | 'sid'>): Promise<CustomerPrincipal> {
    const account = await this.sessions.find(claims.sub, claims.sid);
    if (!account || account.tokenVersion !== claims.tv) throw new UnauthorizedError('The token was revoked.');
    return new CustomerPrincipal(account.userId, account.role, account.emailVerified, { sub: claims.sub, tv: claims.tv, sid: claims.sid });
  }

  /**
   * ADMIN_EMAIL + ADMIN_PASSWORD at start: creates the administrator, or makes the account with
   * that address one. An account that already is the administrator with this password is left
   * alone, so restarts keep its sessions.
   */
  async ensureAdmin(email: string, password: string): Promise<void> {
    const normalized = User.normalizeEmail(email);
    const now = this.clock.now();
    const existing = await this.users.findByEmail(normalized);
    if (!existing) {
      const admin = User.create({ id: randomUUID(), email: normalized, passwordHash: await this.hasher.hashLowEntropy(password), role: 'admin', verified: true, now });
      // The address stays out of the log (the user id names the account), like every address.
      if (await this.users.insertIfEmailFree(admin)) this.logger.log({ userId: admin.id }, 'Administrator account from ADMIN_EMAIL created');
      return;
    }
    if (existing.isAdmin && existing.emailVerified && (await this.hasher.verifyLowEntropy(password, existing.passwordHash))) return;
    existing.promoteToAdmin(await this.hasher.hashLowEntropy(password), now);
    await this.users.save(existing);
    // Ending the sessions tells CustomerSessions (the refresh-token store's `revoked`).
    await this.tokens.revokeAllOf(existing.id, now);
    this.logger.log({ userId: existing.id }, 'Account of ADMIN_EMAIL is now the administrator; its earlier sessions were revoked');
  }

  private async revokeAllTokens(userId: string): Promise<void> {
    const user = await this.users.findById(userId);
    if (!user) return;
    user.revokeTokens();
    await this.users.save(user);
    this.sessions.changed(userId);
  }

  /** Tells the owner of a taken address that someone tried to sign up with it; at most one mail an hour. */
  private async sendSignupNotice(email: string): Promise<void> {
    const owner = await this.users.findByEmail(email);
    if (!owner) return;
    if ((await this.limiter.tryAcquire([{ key: `signup-notice:user:${owner.id}`, limit: 1, windowSec: 3600 }])) !== 0) return;
    await this.mails.signupNotice(owner);
  }

  /** The account's password, checked as a login is: a wrong one counts against the same limits. */
  private async confirmPassword(user: User, password: string, clientAddress: string): Promise<void> {
    await this.limiter.guard(
      this.loginBuckets(user.email, clientAddress),
      async () => {
        if (!(await this.hasher.verifyLowEntropy(password, user.passwordHash))) throw new WrongPasswordError();
      },
      (error) => error instanceof WrongPasswordError,
    );
  }

  private loginBuckets(email: string, clientAddress: string): FailureBucket[] {
    const windowSec = this.env.LOGIN_FAILURE_WINDOW_SEC;
    return [
      { key: `user-login:email:${email}`, limit: this.env.LOGIN_MAX_FAILURES_PER_DEVICE, windowSec },
      { key: `user-login:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec },
    ];
  }
}
