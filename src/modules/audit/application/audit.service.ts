import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import { decodeCursor, encodeCursor } from '../../../shared/http/cursor.js';
import { asOwnerSees, type AuditAction, type AuditActorKind, type AuditEntry } from '../domain/audit-entry.js';

export interface AuditFilters {
  deviceId?: string;
  actorId?: string;
  actions?: AuditAction[];
  from?: Date;
  to?: Date;
}

export interface AuditPage {
  items: AuditEntry[];
  nextCursor: string | null;
}

/** Where an owner's view of a device's log starts: null, from the beginning (first owner). */
export interface OwnerWindow {
  ownerId: string;
  since: Date | null;
}

interface AuditRow {
  id: string;
  at: Date;
  actor_kind: AuditActorKind;
  actor_user_id: string | null;
  actor_api_key_id: string | null;
  action: AuditAction;
  device_id: string | null;
  target: string;
  client_address: string | null;
  detail: Record<string, unknown>;
}

const COLUMNS = 'a.id, a.at, a.actor_kind, a.actor_user_id, a.actor_api_key_id, a.action, a.device_id, a.target, a.client_address, a.detail';

const SEQUENCE = /^[1-9][0-9]{0,18}$/;

const toEntry = (row: AuditRow): AuditEntry => ({
  id: row.id,
  at: row.at,
  actor: { kind: row.actor_kind, userId: row.actor_user_id, apiKeyId: row.actor_api_key_id },
  action: row.action,
  deviceId: row.device_id,
  target: row.target,
  clientAddress: row.client_address,
  detail: row.detail,
});

/** The audit log as owners and administrators read it: newest first, keyset-paginated on id. */
@Injectable()
export class AuditService {
  constructor(private readonly sql: Sql) {}

  /**
   * The one check of who reads a device's log: its owner, for their own ownership (from the
   * device's visible_since on). Anyone else, people the device is shared with included, gets the
   * 404 of a device that does not exist.
   */
  async ownerWindow(userId: string, deviceId: string): Promise<OwnerWindow> {
    const [row] = await this.sql.rows<{ visible_since: Date | null }>('SELECT visible_since FROM devices WHERE device_id = $1 AND owner_id = $2', [deviceId, userId]);
    if (!row) throw new NotFoundError('You own no device with this id.');
    return { ownerId: userId, since: row.visible_since };
  }

  /**
   * The device's entries within the owner's window: from visible_since on, and only those of
   * their ownership or of none (an entry written at the very instant of the previous owner's
   * release is that owner's, and stays theirs).
   */
  async forOwner(userId: string, deviceId: string, limit: number, cursor?: string): Promise<AuditPage> {
    const before = this.before(cursor);
    const window = await this.ownerWindow(userId, deviceId);
    const rows = await this.sql.rows<AuditRow>(
      `SELECT ${COLUMNS} FROM audit_log a
        WHERE a.device_id = $1 AND a.at >= COALESCE($2::timestamptz, '-infinity') AND (a.owner_id IS NULL OR a.owner_id = $3::uuid)
          AND a.id < COALESCE($4::bigint, 9223372036854775807)
        ORDER BY a.id DESC LIMIT $5`,
      [deviceId, window.since, window.ownerId, before, limit + 1],
    );
    return this.page(rows.map(toEntry).map(asOwnerSees), limit);
  }

  async forAdmin(filters: AuditFilters, limit: number, cursor?: string): Promise<AuditPage> {
    if (filters.from && filters.to && filters.from > filters.to) throw new ValidationFailedError([{ field: 'from', message: 'from must not be after to' }]);
    const values: unknown[] = [];
    const param = (value: unknown, type: string) => {
      values.push(value);
      return `$${values.length}::${type}`;
    };
    const conditions: string[] = [];
    const before = this.before(cursor);
    if (before !== null) conditions.push(`a.id < ${param(before, 'bigint')}`);
    if (filters.deviceId !== undefined) conditions.push(`a.device_id = ${param(filters.deviceId, 'varchar')}`);
    if (filters.actorId !== undefined) conditions.push(`a.actor_user_id = ${param(filters.actorId, 'uuid')}`);
    if (filters.actions !== undefined) conditions.push(`a.action = ANY(${param(filters.actions, 'text[]')})`);
    if (filters.from !== undefined) conditions.push(`a.at >= ${param(filters.from, 'timestamptz')}`);
    if (filters.to !== undefined) conditions.push(`a.at < ${param(filters.to, 'timestamptz')}`);
    const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    const rows = await this.sql.rows<AuditRow>(`SELECT ${COLUMNS} FROM audit_log a ${where} ORDER BY a.id DESC LIMIT ${param(limit + 1, 'int')}`, values);
    return this.page(rows.map(toEntry), limit);
  }

  private before(cursor: string | undefined): string | null {
    return cursor === undefined ? null : decodeCursor(cursor, (value) => SEQUENCE.test(value) && BigInt(value) <= 9_223_372_036_854_775_807n);
  }

  private page(entries: AuditEntry[], limit: number): AuditPage {
    const items = entries.slice(0, limit);
    return { items, nextCursor: entries.length > limit ? encodeCursor(items[items.length - 1].id) : null };
  }
}
