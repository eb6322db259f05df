import { Injectable } from '@nestjs/common';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { DEVICE_OWNERS } from '../../devices/sql-api.js';
import type { NewAuditEntry } from '../domain/audit-entry.js';
import { AuditLog } from '../domain/audit-log.js';

@Injectable()
export class SqlAuditLog extends AuditLog {
  async record(tx: SqlRunner, entry: NewAuditEntry): Promise<void> {
    const { actor } = entry.by;
    const deviceId = entry.deviceId ?? null;
    const ownerGiven = entry.ownerId !== undefined;
    // The device's owner as this transaction sees it, unless the caller names the owner.
    await tx.rows(
      `INSERT INTO audit_log (at, actor_kind, actor_user_id, actor_api_key_id, action, device_id, owner_id, target, client_address, detail)
       VALUES ($1, $2, $3, $4, $5, $6::varchar,
               CASE WHEN $7::boolean THEN $8::uuid ELSE (SELECT owner_id FROM ${DEVICE_OWNERS} WHERE device_id = $6::varchar) END,
               $9, $10, $11)`,
      [
        entry.at,
        actor.kind,
        actor.userId,
        actor.apiKeyId,
        entry.action,
        deviceId,
        ownerGiven,
        entry.ownerId ?? null,
        entry.target.slice(0, 200),
        entry.by.clientAddress?.slice(0, 64) ?? null,
        JSON.stringify(entry.detail ?? {}),
      ],
    );
  }
}
