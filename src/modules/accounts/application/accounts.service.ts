import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { CustomerPrincipal } from '../../../auth/principals.js';
import { Clock } from '../../../config/config.module.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { UnauthorizedError } from '../../../shared/domain-error.js';
import { AdministratorNotDeletableError } from '../domain/accounts.errors.js';
import { User } from '../domain/user.js';
import { UserRepository } from '../domain/user.repository.js';
import { AccountHooks } from './account-hooks.js';
import { AccountErasure } from './account-erasure.js';
import { CustomerSessions } from './customer-sessions.js';
import { PasswordCheck } from './password-check.js';
import { UserTokens } from './user-tokens.js';

/**
 * The account itself: what its owner reads, sets and deletes, the administrator's account at start,
 * and what other modules look up (where its mails go, the account behind an address).
 */
@Injectable()
export class AccountsService {
  private readonly logger = new Logger(AccountsService.name);

  constructor(
    private readonly users: UserRepository,
    private readonly tokens: UserTokens,
    private readonly hasher: SecretHasher,
    private readonly passwordCheck: PasswordCheck,
    private readonly clock: Clock,
    private readonly sessions: CustomerSessions,
    private readonly erasure: AccountErasure,
    private readonly hooks: AccountHooks,
  ) {}

  /**
   * Deletes the account: in one transaction, every module's erasure step (its devices released,
   * with their events and audit rows) and then the account's row, which takes its sessions, links,
   * webhooks and pending notifications along. Telemetry stays with the devices.
   */
  async deleteAccount(customer: CustomerPrincipal, password: string, clientAddress: string): Promise<void> {
    const user = await this.getUser(customer.userId);
    if (user.isAdmin) throw new AdministratorNotDeletableError();
    await this.passwordCheck.confirm(user, password, clientAddress);
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

  /** A signed-in customer's account: one deleted since is a 401, as a revoked token is. */
  async getUser(userId: string): Promise<User> {
    const user = await this.users.findById(userId);
    if (!user) throw new UnauthorizedError('The account no longer exists.');
    return user;
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
      if (await this.users.insertIfEmailFree(admin, (tx) => this.hooks.created(tx, { userId: admin.id, email: admin.email, at: now }))) this.logger.log({ userId: admin.id }, 'Administrator account from ADMIN_EMAIL created');
      return;
    }
    if (existing.isAdmin && existing.emailVerified && (await this.hasher.verifyLowEntropy(password, existing.passwordHash))) return;
    existing.promoteToAdmin(await this.hasher.hashLowEntropy(password), now);
    await this.users.save(existing);
    // Ending the sessions tells CustomerSessions (the refresh-token store's `revoked`).
    await this.tokens.revokeAllOf(existing.id, now);
    this.logger.log({ userId: existing.id }, 'Account of ADMIN_EMAIL is now the administrator; its earlier sessions were revoked');
  }
}
