import { Module } from '@nestjs/common';
import { AuditService } from './application/audit.service.js';
import { AuditLog } from './domain/audit-log.js';
import { AuditQueries } from './domain/audit-queries.js';
import { AdminAuditController, DeviceAuditController } from './http/audit.controller.js';
import { SqlAuditLog } from './infrastructure/sql-audit-log.js';
import { SqlAuditQueries } from './infrastructure/sql-audit-queries.js';

/** The audit log: who changed what, written by every module in the transaction of its change. */
@Module({
  controllers: [DeviceAuditController, AdminAuditController],
  providers: [{ provide: AuditLog, useClass: SqlAuditLog }, { provide: AuditQueries, useClass: SqlAuditQueries }, AuditService],
  exports: [AuditLog, AuditService],
})
export class AuditModule {}
