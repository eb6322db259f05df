import { Global, Module } from '@nestjs/common';
import { Clock } from '../../config/config.module.js';
import { Env } from '../../config/env.js';
import { Secrets } from '../../config/secrets.js';
import { AddressGroupingLimiter } from './address-grouping.js';
import { FailureLimiter, InMemoryFailureLimiter } from './failure-limiter.js';
import { RedisFailureLimiter } from './redis-failure-limiter.js';

/** REDIS_URL set: the limits are shared by every instance through Redis. Unset: kept in this process. */
@Global()
@Module({
  providers: [
    {
      provide: FailureLimiter,
      inject: [Env, Secrets, Clock],
      useFactory: (env: Env, secrets: Secrets, clock: Clock): FailureLimiter =>
        new AddressGroupingLimiter(
          env.REDIS_URL
            ? RedisFailureLimiter.connect(env.REDIS_URL, { keyPrefix: env.REDIS_KEY_PREFIX, keySecret: secrets.pepper })
            : new InMemoryFailureLimiter(() => clock.now().getTime()),
          env.RATE_LIMIT_IPV6_PREFIX,
        ),
    },
  ],
  exports: [FailureLimiter],
})
export class RateLimitModule {}
