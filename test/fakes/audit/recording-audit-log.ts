import type { NewAuditEntry } from '../../../src/modules/audit/domain/audit-entry.js';
import { AuditLog } from '../../../src/modules/audit/domain/audit-log.js';

/** The audit log for unit tests: keeps what would be recorded, in order, without a database. */
export class RecordingAuditLog extends AuditLog {
  readonly recorded: NewAuditEntry[] = [];

  override async record(_tx: unknown, entry: NewAuditEntry): Promise<void> {
    this.recorded.push(entry);
  }
}
