import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { BoundedMap } from '../../../shared/memory/bounded-map.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';
import type { Role } from '../domain/user.js';
import { UserRepository } from '../domain/user.repository.js';

/** What the customer guard reads of an account in one of its sessions. */
export interface SessionAccount {
  userId: string;
  role: Role;
  emailVerified: boolean;
  tokenVersion: number;
}

/** Sessions kept per account at most; past it, its least recently used one goes. */
const SESSIONS_PER_ACCOUNT = 16;

/**
 * The customer guard's per-request read (the account, and whether the token's session still has
 * a live refresh token) from memory, as DeviceSnapshots does for devices: forgotten, on every
 * instance, when the change feed names the account (triggers of migration CustomerSessionCache:
 * role, verification, token version, deletion, a session's end), and read from the database
 * while the feed is down. Writes on this instance call `changed` after their commit, so their own
 * next request already sees them. Only live sessions are kept: an unknown one is read every time.
 */
@Injectable()
export class CustomerSessions {
  /** userId → sessionId → account; accounts bounded by ACCOUNT_CACHE_MAX_ENTRIES. */
  private readonly byUser: BoundedMap<BoundedMap<SessionAccount>>;

  constructor(
    private readonly users: UserRepository,
    private readonly feed: ChangeFeed,
    caches: MemoryCaches,
  ) {
    this.byUser = caches.perAccount('customer_sessions');
    feed.subscribe('user', (userId) => (userId === '*' || userId === '' ? this.clear() : this.forget(userId)));
  }

  async find(userId: string, sessionId: string): Promise<SessionAccount | null> {
    if (this.feed.live) {
      const cached = this.byUser.get(userId)?.get(sessionId);
      if (cached) return cached;
    }
    const epoch = this.feed.epoch;
    const user = await this.users.findInSession(userId, sessionId);
    if (!user) return null;
    const account: SessionAccount = { userId: user.id, role: user.role, emailVerified: user.emailVerified, tokenVersion: user.tokenVersion };
    // A change heard while reading may be older or newer than what was read: keep nothing then.
    if (this.feed.live && this.feed.epoch === epoch) {
      let sessions = this.byUser.get(userId);
      if (!sessions) this.byUser.set(userId, (sessions = new BoundedMap(SESSIONS_PER_ACCOUNT)));
      sessions.set(sessionId, account);
    }
    return account;
  }

  /** This instance committed a change to the account or its sessions. */
  changed(userId: string): void {
    this.feed.changed('user', userId);
  }

  private forget(userId: string): void {
    this.byUser.delete(userId);
  }

  private clear(): void {
    this.byUser.clear();
  }
}
