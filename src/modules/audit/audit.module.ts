import { Module } from '@nestjs/common';
import { AuditLog } from './application/audit-log.js';
import { AuditService } from './application/audit.service.js';
import { AdminAuditController, DeviceAuditController } from './http/audit.controller.js';

/** The audit log: who changed what, written by every module in the transaction of its change. */
@Module({
  controllers: [DeviceAuditController, AdminAuditController],
  providers: [AuditLog, AuditService],
  exports: [AuditLog, AuditService],
})
export class AuditModule {}
