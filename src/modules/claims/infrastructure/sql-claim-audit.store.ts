import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { ClaimAuditStore, type ClaimAuditEntry } from '../domain/claim-audit.store.js';

@Injectable()
export class SqlClaimAuditStore extends ClaimAuditStore {
  constructor(private readonly sql: Sql) {
    super();
  }

  async record(entry: ClaimAuditEntry, tx: SqlRunner = this.sql): Promise<void> {
    await tx.rows('INSERT INTO claim_audit (at, user_id, device_id, action, outcome, client_address) VALUES ($1, $2, $3, $4, $5, $6)', [
      entry.at,
      entry.userId,
      entry.deviceId,
      entry.action,
      entry.outcome,
      entry.clientAddress.slice(0, 64),
    ]);
  }
}
