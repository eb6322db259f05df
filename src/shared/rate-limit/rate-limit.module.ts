import { Global, Module } from '@nestjs/common';
import { FailureLimiter, InMemoryFailureLimiter } from './failure-limiter.js';

@Global()
@Module({
  providers: [{ provide: FailureLimiter, useFactory: () => new InMemoryFailureLimiter() }],
  exports: [FailureLimiter],
})
export class RateLimitModule {}
