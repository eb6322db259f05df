import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { ReplicaSql } from '../../../shared/database/replica-sql.js';
import { VISIBLE_DEVICES } from '../../sharing/sql-api.js';
import type { AuditAction, AuditActorKind, AuditEntry } from '../domain/audit-entry.js';
import { AuditQueries, type AuditFilters, type OwnerWindow } from '../domain/audit-queries.js';

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

@Injectable()
export class SqlAuditQueries extends AuditQueries {
  /** The entries may be a few seconds old (`replica`); who may read them is asked of the primary. */
  constructor(
    private readonly sql: Sql,
    private readonly replica: ReplicaSql,
  ) {
    super();
  }

  async ownerWindow(userId: string, deviceId: string): Promise<OwnerWindow | null> {
    const [row] = await this.sql.rows<{ owner_id: string; visible_since: Date | null }>(
      `SELECT v.owner_id, v.visible_since FROM ${VISIBLE_DEVICES}(false, $2) v WHERE v.device_id = $1 AND v.role = 'owner'`,
      [deviceId, userId],
    );
    return row ? { ownerId: row.owner_id, since: row.visible_since } : null;
  }

  async forOrganization(organizationId: string, before: string | null, limit: number): Promise<AuditEntry[]> {
    const rows = await this.replica.rows<AuditRow>(
      `SELECT ${COLUMNS} FROM audit_log a WHERE a.owner_id = $1 AND a.id < COALESCE($2::bigint, 9223372036854775807) ORDER BY a.id DESC LIMIT $3`,
      [organizationId, before, limit],
    );
    return rows.map(toEntry);
  }

  async forOwner(deviceId: string, window: OwnerWindow, before: string | null, limit: number): Promise<AuditEntry[]> {
    const rows = await this.replica.rows<AuditRow>(
      `SELECT ${COLUMNS} FROM audit_log a
        WHERE a.device_id = $1 AND a.at >= COALESCE($2::timestamptz, '-infinity') AND (a.owner_id IS NULL OR a.owner_id = $3::uuid)
          AND a.id < COALESCE($4::bigint, 9223372036854775807)
        ORDER BY a.id DESC LIMIT $5`,
      [deviceId, window.since, window.ownerId, before, limit],
    );
    return rows.map(toEntry);
  }

  async forAdmin(filters: AuditFilters, before: string | null, limit: number): Promise<AuditEntry[]> {
    const values: unknown[] = [];
    const param = (value: unknown, type: string) => {
      values.push(value);
      return `$${values.length}::${type}`;
    };
    const conditions: string[] = [];
    if (before !== null) conditions.push(`a.id < ${param(before, 'bigint')}`);
    if (filters.deviceId !== undefined) conditions.push(`a.device_id = ${param(filters.deviceId, 'varchar')}`);
    if (filters.actorId !== undefined) conditions.push(`a.actor_user_id = ${param(filters.actorId, 'uuid')}`);
    if (filters.actions !== undefined) conditions.push(`a.action = ANY(${param(filters.actions, 'text[]')})`);
    if (filters.from !== undefined) conditions.push(`a.at >= ${param(filters.from, 'timestamptz')}`);
    if (filters.to !== undefined) conditions.push(`a.at < ${param(filters.to, 'timestamptz')}`);
    const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    const rows = await this.replica.rows<AuditRow>(`SELECT ${COLUMNS} FROM audit_log a ${where} ORDER BY a.id DESC LIMIT ${param(limit, 'int')}`, values);
    return rows.map(toEntry);
  }
}
