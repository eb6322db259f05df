import { Injectable } from '@nestjs/common';
import { NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import { decodeCursor, encodeCursor } from '../../../shared/http/cursor.js';
import { asOwnerSees, type AuditEntry } from '../domain/audit-entry.js';
import { AuditQueries, type AuditFilters, type OwnerWindow } from '../domain/audit-queries.js';

export type { AuditFilters, OwnerWindow } from '../domain/audit-queries.js';

export interface AuditPage {
  items: AuditEntry[];
  nextCursor: string | null;
}

const SEQUENCE = /^[1-9][0-9]{0,18}$/;

/** The audit log as owners and administrators read it: newest first, keyset-paginated on id. */
@Injectable()
export class AuditService {
  constructor(private readonly queries: AuditQueries) {}

  /**
   * The one check of who reads a device's log: its owner (an owner or admin of the organization
   * that owns it), for that ownership (from the device's visible_since on). Anyone else, people the
   * device is shared with included, gets the 404 of a device that does not exist.
   */
  async ownerWindow(userId: string, deviceId: string): Promise<OwnerWindow> {
    const window = await this.queries.ownerWindow(userId, deviceId);
    if (!window) throw new NotFoundError('You own no device with this id.');
    return window;
  }

  /**
   * The device's entries within the owner's window: from visible_since on, and only those of
   * their ownership or of none (an entry written at the very instant of the previous owner's
   * release is that owner's, and stays theirs).
   */
  async forOwner(userId: string, deviceId: string, limit: number, cursor?: string): Promise<AuditPage> {
    const before = this.before(cursor);
    const window = await this.ownerWindow(userId, deviceId);
    const entries = await this.queries.forOwner(deviceId, window, before, limit + 1);
    return this.page(entries.map(asOwnerSees), limit);
  }

  /**
   * The organization's log, for its owners and admins (the caller checks the role): the entries
   * of its devices while it owned them, and those about the organization itself, as an owner sees
   * them (an administrator's account and address not shown).
   */
  async forOrganization(organizationId: string, limit: number, cursor?: string): Promise<AuditPage> {
    const entries = await this.queries.forOrganization(organizationId, this.before(cursor), limit + 1);
    return this.page(entries.map(asOwnerSees), limit);
  }

  async forAdmin(filters: AuditFilters, limit: number, cursor?: string): Promise<AuditPage> {
    if (filters.from && filters.to && filters.from > filters.to) throw new ValidationFailedError([{ field: 'from', message: 'from must not be after to' }]);
    return this.page(await this.queries.forAdmin(filters, this.before(cursor), limit + 1), limit);
  }

  private before(cursor: string | undefined): string | null {
    return cursor === undefined ? null : decodeCursor(cursor, (value) => SEQUENCE.test(value) && BigInt(value) <= 9_223_372_036_854_775_807n);
  }

  private page(entries: AuditEntry[], limit: number): AuditPage {
    const items = entries.slice(0, limit);
    return { items, nextCursor: entries.length > limit ? encodeCursor(items[items.length - 1].id) : null };
  }
}
