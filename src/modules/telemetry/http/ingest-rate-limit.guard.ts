import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Env } from '../../../config/env.js';
import { RateLimitedError } from '../../../shared/domain-error.js';
import type { BoundedMap } from '../../../shared/memory/bounded-map.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import type { DevicePrincipal } from '../../../auth/principals.js';

/** After the shared store failed to answer, uploads go unlimited this long without waiting on it again. */
const STORE_PAUSE_MS = 5000;

/**
 * A budget of TELEMETRY_MAX_REQUESTS_PER_DEVICE uploads per TELEMETRY_RATE_WINDOW_SEC for each
 * device, checked after the device guard and before the batch is validated or written. Counted
 * with the FailureLimiter (in Redis when REDIS_URL is set: one EVAL per upload). A device this
 * instance refused is refused again from memory until its window ends, so a flooding gateway costs
 * no round trips. Unlike the credential limits this one fails open: while Redis does not answer,
 * uploads are not limited, because losing telemetry is worse than admitting a burst.
 */
@Injectable()
export class IngestRateLimitGuard implements CanActivate {
  /** deviceId → when its block ends. */
  private readonly blockedUntil: BoundedMap<number>;
  private storePausedUntil = 0;

  constructor(
    private readonly limiter: FailureLimiter,
    private readonly env: Env,
    caches: MemoryCaches,
  ) {
    this.blockedUntil = caches.perDevice('upload_blocks');
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const { deviceId } = context.switchToHttp().getRequest<FastifyRequest & { user: DevicePrincipal }>().user;
    const now = Date.now();
    const until = this.blockedUntil.get(deviceId);
    if (until !== undefined) {
      if (until > now) throw tooMany(Math.ceil((until - now) / 1000));
      this.blockedUntil.delete(deviceId);
    }
    if (now < this.storePausedUntil) return true;
    const bucket: FailureBucket = { key: `ingest:device:${deviceId}`, limit: this.env.TELEMETRY_MAX_REQUESTS_PER_DEVICE, windowSec: this.env.TELEMETRY_RATE_WINDOW_SEC };
    const wait = await this.limiter.tryAcquire([bucket]);
    if (wait === null) {
      this.storePausedUntil = now + STORE_PAUSE_MS;
      return true;
    }
    if (wait === 0) return true;
    this.blockedUntil.set(deviceId, now + wait * 1000);
    throw tooMany(wait);
  }

}

function tooMany(retryAfterSec: number): RateLimitedError {
  return new RateLimitedError('ingest', retryAfterSec, 'Too many telemetry uploads from this device. Try again later.');
}
