import { Global, Module } from '@nestjs/common';
import { Clock } from '../../config/config.module.js';
import { Env } from '../../config/env.js';
import { Secrets } from '../../config/secrets.js';
import { MemoryCaches } from '../memory/memory-caches.js';
import { AddressGroupingLimiter } from './address-grouping.js';
import { FailureLimiter, InMemoryFailureLimiter } from './failure-limiter.js';
import { RedisFailureLimiter } from './redis-failure-limiter.js';

/** REDIS_URL set: the limits are shared by every instance through Redis. Unset: kept in this process. */
@Global()
@Module({
  providers: [
    {
      provide: FailureLimiter,
      inject: [Env, Secrets, Clock, MemoryCaches],
      useFactory: (env: Env, secrets: Secrets, clock: Clock, caches: MemoryCaches): FailureLimiter => {
        if (env.REDIS_URL) {
          return new AddressGroupingLimiter(RedisFailureLimiter.connect(env.REDIS_URL, { keyPrefix: env.REDIS_KEY_PREFIX, keySecret: secrets.pepper }), env.RATE_LIMIT_IPV6_PREFIX);
        }
        // In memory, one window per limited subject (every uploading device among them): bounded, and counted in /metrics.
        const inMemory = new InMemoryFailureLimiter(() => clock.now().getTime());
        caches.track('rate_limit_windows', inMemory);
        return new AddressGroupingLimiter(inMemory, env.RATE_LIMIT_IPV6_PREFIX);
      },
    },
  ],
  exports: [FailureLimiter],
})
export class RateLimitModule {}
