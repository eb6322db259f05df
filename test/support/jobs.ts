import type pg from 'pg';
import { eventually } from './eventually.js';

/**
 * Waits until the job queue holds no job that is waiting or running: what earlier requests
 * enqueued (a verification mail, say) has been done, so it cannot be mistaken for a write of the
 * request a test sends next. A job scheduled to start after the wait could end (a command's
 * expiry, due when its ttl runs out) is not work in flight and is not waited for.
 */
export async function jobsSettled(db: pg.Pool, timeoutMs = 10_000): Promise<void> {
  await eventually(async () => {
    // Named, so each connection plans it once: some suites ask before every request they send.
    const { rows } = await db.query<{ pending: number }>({
      name: 'jobs-pending',
      text: "SELECT count(*)::int AS pending FROM pgboss.job WHERE state = 'active' OR (state IN ('created', 'retry') AND start_after <= now() + $1 * interval '1 millisecond')",
      values: [timeoutMs],
    });
    if (rows[0].pending > 0) throw new Error(`${rows[0].pending} jobs still pending after ${timeoutMs} ms`);
  }, timeoutMs);
}
