import type pg from 'pg';
import { eventually } from './eventually.js';

/**
 * Waits until the job queue holds no job that is waiting or running: what earlier requests
 * enqueued (a verification mail, say) has been done, so it cannot be mistaken for a write of the
 * request a test sends next. A job scheduled to start later than half the wait from its start (a
 * command's expiry, due when its ttl runs out; the next slot of a digest) is not work in flight and
 * is not waited for; one due before has the other half of the wait to run.
 */
export async function jobsSettled(db: pg.Pool, timeoutMs = 10_000): Promise<void> {
  const { rows: started } = await db.query<{ horizon: Date }>("SELECT now() + $1 * interval '1 millisecond' AS horizon", [timeoutMs / 2]);
  const horizon = started[0].horizon;
  await eventually(async () => {
    // Named, so each connection plans it once: some suites ask before every request they send.
    const { rows } = await db.query<{ pending: number; queues: string | null }>({
      name: 'jobs-pending',
      text: "SELECT count(*)::int AS pending, string_agg(DISTINCT name || ' (' || state || ')', ', ') AS queues FROM pgboss.job WHERE state = 'active' OR (state IN ('created', 'retry') AND start_after <= $1)",
      values: [horizon],
    });
    if (rows[0].pending > 0) throw new Error(`${rows[0].pending} jobs still pending after ${timeoutMs} ms: ${rows[0].queues}`);
  }, timeoutMs);
}
