import { Injectable } from '@nestjs/common';
import { Orm } from '../../../shared/database/orm.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { ClaimAuditStore, type ClaimAuditEntry } from '../domain/claim-audit.store.js';
import { ClaimAuditRecord } from './claim-audit.record.js';

@Injectable()
export class TypeOrmClaimAuditStore extends ClaimAuditStore {
  constructor(private readonly orm: Orm) {
    super();
  }

  async record(entry: ClaimAuditEntry, tx?: SqlRunner): Promise<void> {
    if (tx) {
      await tx.rows('INSERT INTO claim_audit (at, user_id, device_id, action, outcome, client_address) VALUES ($1, $2, $3, $4, $5, $6)', [
        entry.at,
        entry.userId,
        entry.deviceId,
        entry.action,
        entry.outcome,
        entry.clientAddress.slice(0, 64),
      ]);
      return;
    }
    await this.orm.run((manager) =>
      manager
        .createQueryBuilder()
        .insert()
        .into(ClaimAuditRecord)
        .values({ at: entry.at, userId: entry.userId, deviceId: entry.deviceId, action: entry.action, outcome: entry.outcome, clientAddress: entry.clientAddress.slice(0, 64) })
        .updateEntity(false)
        .execute(),
    );
  }
}
