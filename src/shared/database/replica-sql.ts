import { Injectable } from '@nestjs/common';
import type pg from 'pg';
import { isDatabaseUnavailable } from './database-errors.js';
import { ReadReplicas } from './read-replicas.js';
import { rowsOn, Sql, snapshotOn, type HeldSnapshot, type SqlRunner } from './sql.js';

/** serialization_failure: on a standby, a read cancelled because it conflicted with replay. */
const RECOVERY_CONFLICT = '40001';

/** The replica could not answer: the same read on the primary will do. */
function replicaFault(error: unknown): boolean {
  return isDatabaseUnavailable(error) || (error as { code?: unknown } | null)?.code === RECOVERY_CONFLICT;
}

/**
 * Sql for reads that may be up to REPLICA_MAX_LAG_MS old: on a read replica when one is close
 * enough to the primary (ReadReplicas), on the primary otherwise. A replica that fails a read is
 * skipped and the read runs again on the primary, so a replica's trouble never reaches the caller.
 *
 * Only for reads a request makes before it writes anything, answers that a dashboard shows (history,
 * exports, battery energy and health, event and audit logs, alert and device lists). Device-facing
 * routes, credentials, permission checks and every read inside or after a write use Sql.
 */
@Injectable()
export class ReplicaSql implements SqlRunner {
  constructor(
    private readonly sql: Sql,
    private readonly replicas: ReadReplicas,
  ) {}

  rows<T>(text: string, values: unknown[] = [], name?: string): Promise<T[]> {
    return this.onReplicaOr((pool) => rowsOn<T>(pool, text, values, name), () => this.sql.rows<T>(text, values, name));
  }

  /** Sql.snapshot() on a replica, or on the primary. */
  snapshot(): Promise<HeldSnapshot> {
    return this.onReplicaOr((pool) => snapshotOn(pool), () => this.sql.snapshot());
  }

  /** Without a replica to read (none configured, the common case) the primary's read straight away: no extra await on the history path. */
  private onReplicaOr<T>(read: (pool: pg.Pool) => Promise<T>, onPrimary: () => Promise<T>): Promise<T> {
    const pool = this.replicas.pick();
    if (!pool) return onPrimary();
    return read(pool).catch((error: unknown) => {
      if (!replicaFault(error)) throw error;
      this.replicas.failed(pool);
      return onPrimary();
    });
  }
}
