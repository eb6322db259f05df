/** The audit module's public surface: what other modules and the composition root may import. */
export { AuditModule } from './audit.module.js';
export { AuditLog } from './domain/audit-log.js';
export { AuditService } from './application/audit.service.js';
export { AUDIT_ACTIONS, SYSTEM, type AuditAction, type AuditActor, type AuditContext, type NewAuditEntry } from './domain/audit-entry.js';
export { actorOf, Requester } from './http/requester.decorator.js';
export { AuditEntryResponse, AuditPageResponse, DeviceAuditQuery as AuditPageQuery } from './http/audit.dto.js';
import { AuditLogRecord } from './infrastructure/audit-log.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const AUDIT_RECORDS = [AuditLogRecord];
