import { Injectable } from '@nestjs/common';
import { ADVISORY_LOCKS } from '../../../shared/database/advisory-locks.js';
import { Sql } from '../../../shared/database/sql.js';
import { TelemetryCompactionStore, type PendingDay } from '../domain/telemetry-compaction.store.js';
import { COMPACT_DAY_SQL, LOCK_DEVICES_SQL } from './compaction.sql.js';
import { EPOCH } from './rollup-levels.sql.js';

/** Longest one day's compaction may run. */
const COMPACTION_STATEMENT_TIMEOUT_MS = 300_000;

/**
 * The devices with rows, in device order, one index probe each (a skip scan of the primary key:
 * the partitions' indexes merged), and each one's oldest record.
 */
const PENDING_SQL = `
WITH RECURSIVE stored AS (
  (SELECT device_id FROM telemetry WHERE $2::text IS NULL OR device_id > $2 ORDER BY device_id LIMIT 1)
  UNION ALL
  SELECT (SELECT t.device_id FROM telemetry t WHERE t.device_id > d.device_id ORDER BY t.device_id LIMIT 1)
    FROM stored d WHERE d.device_id IS NOT NULL
)
SELECT d.device_id, date_bin('1 day', o.oldest, ${EPOCH}) AS day
  FROM stored d CROSS JOIN LATERAL (SELECT min(t.ts) AS oldest FROM telemetry t WHERE t.device_id = d.device_id) AS o
 WHERE d.device_id IS NOT NULL AND o.oldest < $1
 LIMIT $3`;

@Injectable()
export class SqlTelemetryCompactionStore extends TelemetryCompactionStore {
  constructor(private readonly sql: Sql) {
    super();
  }

  async pending(before: Date, afterDeviceId: string | null, limit: number): Promise<PendingDay[]> {
    const rows = await this.sql.rows<{ device_id: string; day: Date }>(PENDING_SQL, [before, afterDeviceId, limit]);
    return rows.map((row) => ({ deviceId: row.device_id, day: row.day }));
  }

  async nextDay(deviceId: string, from: Date, before: Date): Promise<Date | null> {
    const [row] = await this.sql.rows<{ day: Date | null }>(
      `SELECT date_bin('1 day', min(ts), ${EPOCH}) AS day FROM telemetry WHERE device_id = $1 AND ts >= $2 AND ts < $3`,
      [deviceId, from, before],
    );
    return row.day;
  }

  compactDay(deviceId: string, day: Date): Promise<number> {
    return this.sql.transaction(async (tx) => {
      // Batch work, off the request path: a day of a busy gateway may take longer than a request's
      // statement. Its joins are of whole days (hash joins); a nested loop, which the planner may
      // choose when a table has no statistics yet, would be quadratic.
      await tx.rows(`SET LOCAL statement_timeout = ${COMPACTION_STATEMENT_TIMEOUT_MS}`);
      await tx.rows('SET LOCAL enable_nestloop = off');
      await tx.rows(LOCK_DEVICES_SQL, [[deviceId]]);
      const [row] = await tx.rows<{ records: number }>(COMPACT_DAY_SQL, [deviceId, day], 'telemetry_compact_day');
      return row.records;
    });
  }

  exclusively<T>(work: () => Promise<T>): Promise<T | undefined> {
    return this.sql.exclusively(ADVISORY_LOCKS.telemetryCompaction, work);
  }
}
