import type { SqlRunner } from './sql-runner.js';

/** One step of a time-partitioned table's layout: where a partition starts, the next one, its name. */
export interface PartitionLayout {
  /** The start of the partition holding `at` (a UTC month or day). */
  startOf(at: Date): Date;
  /** The start of the partition after the one starting at `start`. */
  next(start: Date): Date;
  nameOf(start: Date): string;
}

/**
 * Keeps a table partitioned by range on a timestamp: drops the partitions wholly before `cutoff`
 * and creates every one from `cutoff`'s to `until`'s. Retention without DELETE. DDL on partitions,
 * which TypeORM's API does not cover; run it in a transaction holding the owner's advisory lock.
 * Answers the partitions created and dropped, and where the oldest one left starts (null: none).
 */
export async function maintainPartitions(
  tx: SqlRunner,
  parent: string,
  layout: PartitionLayout,
  cutoff: Date,
  until: Date,
): Promise<{ created: string[]; dropped: string[]; oldest: Date | null }> {
  const existing = await tx.rows<{ name: string; lower: Date | null; upper: Date }>(
    `SELECT c.relname AS name,
            (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz AS lower,
            (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz AS upper
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass`,
    [parent],
  );
  const dropped: string[] = [];
  let oldest: Date | null = null;
  for (const partition of existing) {
    if (partition.upper <= cutoff) {
      await tx.rows(`DROP TABLE ${partition.name}`);
      dropped.push(partition.name);
    } else if (partition.lower !== null && (oldest === null || partition.lower < oldest)) {
      oldest = partition.lower;
    }
  }
  const names = new Set(existing.map((partition) => partition.name));
  const created: string[] = [];
  for (let start = layout.startOf(cutoff); start <= layout.startOf(until); start = layout.next(start)) {
    const name = layout.nameOf(start);
    if (names.has(name)) continue;
    await tx.rows(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${parent} FOR VALUES FROM ('${start.toISOString()}') TO ('${layout.next(start).toISOString()}')`);
    created.push(name);
    if (oldest === null || start < oldest) oldest = start;
  }
  return { created, dropped, oldest };
}
