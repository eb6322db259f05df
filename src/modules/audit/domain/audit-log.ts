import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { NewAuditEntry } from './audit-entry.js';

/**
 * Records a change in the audit log. Services call it inside the transaction of the change it
 * reports, so the log and the data cannot disagree: an entry exists exactly when its change committed.
 */
export abstract class AuditLog {
  /** The entry's owner is the one given, else the device's owner as this transaction sees it. */
  abstract record(tx: SqlRunner, entry: NewAuditEntry): Promise<void>;
}
