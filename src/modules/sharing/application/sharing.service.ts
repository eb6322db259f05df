import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { Clock } from '../../../config/config.module.js';
import type { SqlRunner } from '../../../shared/database/sql.js';
import { NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { type DeviceShare, MAX_SHARES_PER_DEVICE, type ShareRole } from '../domain/device-share.js';
import { ShareStore } from '../domain/share.store.js';
import { OrganizationsService } from '../../organizations/index.js';
import { TooManySharesError } from '../domain/sharing.errors.js';

/** Whom to share with: an e-mail address, or an organization (all its members). */
export interface ShareRecipient {
  email?: string;
  organizationId?: string;
}

/** Addresses are compared trimmed and lower-cased, as accounts store them. */
export const normalizeShareEmail = (email: string): string => email.trim().toLowerCase();

/**
 * Who shares what: every share is created, changed and revoked here (the one place an audit call
 * goes), by the device's owner only. Answers never tell whether an address has an account.
 */
@Injectable()
export class SharingService {
  constructor(
    private readonly store: ShareStore,
    private readonly clock: Clock,
    private readonly auditLog: AuditLog,
    private readonly organizations: OrganizationsService,
  ) {}

  /**
   * Shares the device with an address or an organization (all its members), or changes the role of
   * an existing share with the same recipient (`created: false`).
   */
  async share(ownerId: string, deviceId: string, to: ShareRecipient, role: ShareRole, by: AuditContext): Promise<{ share: DeviceShare; created: boolean }> {
    const ownerEmail = await this.store.ownerEmail(ownerId, deviceId);
    if (ownerEmail === null) throw notOwned();
    const recipient = await this.recipientOf(ownerId, ownerEmail, to);
    const now = this.clock.now();
    const result = await this.store.upsert({ shareId: randomUUID(), deviceId, ...recipient, role, createdAt: now }, ownerId, MAX_SHARES_PER_DEVICE, (tx, stored) =>
      // A role change is recorded like a new share: the entry says who may now do what.
      this.auditLog.record(tx, {
        by,
        action: 'share.created',
        target: `share:${stored.shareId}`,
        deviceId,
        ownerId,
        at: now,
        detail: stored.organizationId === null ? { email: stored.email, role: stored.role } : { organizationId: stored.organizationId, role: stored.role },
      }),
    );
    if (result.kind === 'not-owner') throw notOwned();
    if (result.kind === 'too-many') throw new TooManySharesError(MAX_SHARES_PER_DEVICE);
    return { share: result.share, created: result.kind === 'created' };
  }

  /** Exactly one of an address (not the owner's own) and an organization that exists (not the owner's personal one). */
  private async recipientOf(ownerId: string, ownerEmail: string, to: ShareRecipient): Promise<{ email: string | null; organizationId: string | null }> {
    if ((to.email === undefined) === (to.organizationId === undefined)) throw new ValidationFailedError([{ field: 'email', message: 'give email or organizationId, not both' }]);
    if (to.organizationId !== undefined) {
      if (to.organizationId === ownerId) throw new ValidationFailedError([{ field: 'organizationId', message: 'organizationId is your personal organization: you own this device already' }]);
      if (!(await this.organizations.exists(to.organizationId))) throw new ValidationFailedError([{ field: 'organizationId', message: 'organizationId is not an organization' }]);
      return { email: null, organizationId: to.organizationId };
    }
    const normalized = normalizeShareEmail(to.email!);
    if (ownerEmail === normalized) throw new ValidationFailedError([{ field: 'email', message: 'email is your own address: you own this device already' }]);
    return { email: normalized, organizationId: null };
  }

  /** The device's shares, oldest first: a page of `limit` after `cursor` (a nextCursor this returned). */
  async list(ownerId: string, deviceId: string, limit: number, cursor?: string): Promise<{ items: DeviceShare[]; nextCursor: string | null }> {
    const after = cursor === undefined ? null : decodeTimeCursor(cursor, (key) => UUID.test(key));
    if ((await this.store.ownerEmail(ownerId, deviceId)) === null) throw notOwned();
    const rows = await this.store.list(ownerId, deviceId, limit + 1, after && { createdAt: after.ts, shareId: after.key });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit ? encodeTimeCursor(last.createdAt, last.shareId) : null };
  }

  /** Ends the share at once: the sharee's next request, and their open streams, see the device no more. */
  async revoke(ownerId: string, deviceId: string, shareId: string, by: AuditContext): Promise<void> {
    if ((await this.store.ownerEmail(ownerId, deviceId)) === null) throw notOwned();
    const now = this.clock.now();
    const deleted = await this.store.delete(ownerId, deviceId, shareId, (tx) =>
      this.auditLog.record(tx, { by, action: 'share.revoked', target: `share:${shareId}`, deviceId, ownerId, at: now }),
    );
    if (!deleted) throw new NotFoundError('This device has no share with this id.');
  }

  /** A release: every share of the device ends, in the release's transaction. */
  endAllOf(tx: SqlRunner, deviceId: string): Promise<void> {
    return this.store.deleteOfDevice(tx, deviceId);
  }

  /** An account verified its address: the shares waiting for it start to count. */
  async bindVerified(userId: string, email: string): Promise<void> {
    await this.store.bind(userId, normalizeShareEmail(email));
  }

  /** Account deletion, in its transaction: every share the account granted or holds, and those waiting for its address. */
  removeAllOf(tx: SqlRunner, userId: string): Promise<number> {
    return this.store.deleteOfUser(tx, userId);
  }

  /** Devices the account holds an active share of, with the owner who granted each. */
  activeSharesOf(userId: string): Promise<Map<string, string>> {
    return this.store.activeOf(userId);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const notOwned = () => new NotFoundError('You own no device with this id.');
