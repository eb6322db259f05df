/**
 * How a delivery (a mail, a webhook call) is retried: pg-boss's exponential backoff with jitter.
 * The n-th retry (n from 0) waits min(delayMaxSec, delaySec × 2^min(16, n) × (½ + ½·random)) seconds.
 */
export interface RetryPolicy {
  delaySec: number;
  delayMaxSec: number;
  /** Retries after the first attempt; then the job is dead-lettered as failed. */
  limit: number;
}

/** Deliveries keep being retried for at least this long (a delivery is promised for at least 24 h). */
export const MIN_DELIVERY_RETRY_SPAN_SEC = 24 * 3600;

/** The shortest time from the first attempt to the last retry, whatever the jitter draws. */
export function guaranteedRetrySpanSec(policy: RetryPolicy): number {
  let span = 0;
  for (let n = 0; n < policy.limit; n++) span += Math.min(policy.delayMaxSec, (policy.delaySec * 2 ** Math.min(16, n)) / 2);
  return span;
}

/** The longest such time: when a delivery that never succeeds is listed as failed at the latest. */
export function longestRetrySpanSec(policy: RetryPolicy): number {
  let span = 0;
  for (let n = 0; n < policy.limit; n++) span += Math.min(policy.delayMaxSec, policy.delaySec * 2 ** Math.min(16, n));
  return span;
}
