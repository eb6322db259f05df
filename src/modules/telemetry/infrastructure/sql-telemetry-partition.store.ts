import { Injectable, Logger } from '@nestjs/common';
import { ADVISORY_LOCKS } from '../../../shared/database/advisory-locks.js';
import { maintainPartitions } from '../../../shared/database/range-partitions.js';
import { Sql } from '../../../shared/database/sql.js';
import { ROLLUP_LEVELS } from '../domain/rollup-levels.js';
import { TelemetryPartitionStore } from '../domain/telemetry-partition.store.js';
import { COMPACT_DAYS, COMPACT_HOURS } from './compact-days.sql.js';
import { rollupTable } from './rollup-levels.sql.js';

function monthStart(date: Date): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));
}

function addMonths(date: Date, months: number): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1));
}

/** Monthly partitions of telemetry. */
const MONTHS = { startOf: monthStart, next: (month: Date) => addMonths(month, 1), nameOf: (month: Date) => partitionName(month) };

export function partitionName(month: Date): string {
  return `telemetry_y${month.getUTCFullYear()}m${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
}

/**
 * Monthly partitions of `telemetry`: every month from the retention cut-off to two months ahead
 * exists, and months wholly older than the cut-off are dropped (retention without DELETE).
 * SQL because it is DDL on partitions, which TypeORM's API does not cover.
 */
@Injectable()
export class SqlTelemetryPartitionStore extends TelemetryPartitionStore {
  private readonly logger = new Logger(TelemetryPartitionStore.name);

  constructor(private readonly sql: Sql) {
    super();
  }

  async maintain(now: Date, retentionDays: number): Promise<{ created: string[]; dropped: string[] }> {
    return this.sql.transaction(async (tx) => {
      const [{ locked }] = await tx.rows<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [ADVISORY_LOCKS.telemetryPartitions]);
      if (!locked) return { created: [], dropped: [] };
      const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
      const { created, dropped, oldest } = await maintainPartitions(tx, 'telemetry', MONTHS, cutoff, addMonths(monthStart(now), 2));
      // Rollup slots and compact days and hours go with the months they summarise or hold: below the
      // oldest month kept (a month starts at a UTC midnight, so no coarser slot or day straddles it).
      if (oldest !== null) {
        for (const { table, column } of [...ROLLUP_LEVELS.map((level) => ({ table: rollupTable(level), column: 'bucket' })), { table: COMPACT_DAYS, column: 'day' }, { table: COMPACT_HOURS, column: 'hour' }]) {
          await tx.rows(`DELETE FROM ${table} WHERE ${column} < $1`, [oldest]);
        }
        // So do the batteries' hours computed from them (and their marks), through the function the
        // batteries module exports for it.
        await tx.rows('SELECT battery_energy_forget_before($1)', [oldest]);
      }
      if (created.length > 0 || dropped.length > 0) this.logger.log({ created, dropped }, 'Telemetry partitions maintained');
      return { created, dropped };
    });
  }
}
