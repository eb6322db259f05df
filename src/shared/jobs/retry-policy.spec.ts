import { describe, expect, it } from '@jest/globals';
import { loadEnv } from '../../config/env.js';
import { guaranteedRetrySpanSec, longestRetrySpanSec, MIN_DELIVERY_RETRY_SPAN_SEC } from './retry-policy.js';

describe('delivery retry policy', () => {
  it('keeps retrying the default way for more than 24 h whatever the jitter draws, and gives up within 2 days', () => {
    const env = loadEnv({});
    const policy = { delaySec: env.DELIVERY_RETRY_DELAY_SEC, delayMaxSec: env.DELIVERY_RETRY_DELAY_MAX_SEC, limit: env.DELIVERY_RETRY_LIMIT };
    expect(guaranteedRetrySpanSec(policy)).toBeGreaterThanOrEqual(MIN_DELIVERY_RETRY_SPAN_SEC);
    expect(longestRetrySpanSec(policy)).toBeLessThan(2 * 24 * 3600);
  });

  it('sums the halved delays, capped', () => {
    // 1×(1/2) + 2×(1/2) + min(3, 4×(1/2)) + min(3, 8/2) = 0.5 + 1 + 2 + 3
    expect(guaranteedRetrySpanSec({ delaySec: 1, delayMaxSec: 3, limit: 4 })).toBe(6.5);
    expect(longestRetrySpanSec({ delaySec: 1, delayMaxSec: 3, limit: 4 })).toBe(1 + 2 + 3 + 3);
    expect(guaranteedRetrySpanSec({ delaySec: 5, delayMaxSec: 3600, limit: 0 })).toBe(0);
  });

  it('refuses a production configuration that gives up before 24 h', () => {
    const production = { NODE_ENV: 'production', DEVICE_JWT_SECRET: 'd'.repeat(40), CUSTOMER_JWT_SECRET: 'c'.repeat(40), SECRET_PEPPER: 'p'.repeat(40), DATABASE_URL: 'postgres://db/x' };
    expect(() => loadEnv({ ...production, DELIVERY_RETRY_LIMIT: '3' })).toThrow(/at least 24 h/);
    expect(() => loadEnv(production)).not.toThrow();
  });
});
