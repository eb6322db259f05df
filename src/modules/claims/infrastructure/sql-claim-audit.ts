import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { ClaimAudit, type ClaimAuditEntry } from '../domain/claim-audit.js';

@Injectable()
export class SqlClaimAudit extends ClaimAudit {
  constructor(private readonly sql: Sql) {
    super();
  }

  async record(entry: ClaimAuditEntry): Promise<void> {
    await this.sql.rows(
      'INSERT INTO claim_audit (at, user_id, device_id, action, outcome, client_address) VALUES ($1, $2, $3, $4, $5, $6)',
      [entry.at, entry.userId, entry.deviceId, entry.action, entry.outcome, entry.clientAddress.slice(0, 64)],
    );
  }
}
