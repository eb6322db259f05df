import { Injectable } from '@nestjs/common';
import { Orm } from '../../../shared/database/orm.js';
import { ClaimAudit, type ClaimAuditEntry } from '../domain/claim-audit.js';
import { ClaimAuditRecord } from './claim-audit.record.js';

@Injectable()
export class TypeOrmClaimAudit extends ClaimAudit {
  constructor(private readonly orm: Orm) {
    super();
  }

  async record(entry: ClaimAuditEntry): Promise<void> {
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
