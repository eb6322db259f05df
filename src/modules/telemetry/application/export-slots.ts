import { Injectable } from '@nestjs/common';
import { Env, exportMaxConcurrent } from '../../../config/env.js';
import { DomainError } from '../../../shared/domain-error.js';

/** An export runs for seconds to a minute: asking again much sooner would only be refused again. */
export const EXPORT_RETRY_AFTER_SEC = 10;

export class TooManyExportsError extends DomainError {
  constructor(message: string, limiter: 'exports-per-user' | 'exports-per-instance') {
    super('TOO_MANY_EXPORTS', 'rate-limited', message, { retryAfterSec: EXPORT_RETRY_AFTER_SEC, limiter });
  }
}

/**
 * Exports running on this instance, per account and in all. Each holds a pool connection for as
 * long as its client reads, so without a bound a few large downloads would leave every other
 * request waiting for a connection. Counted per instance, like the stream cap: the bound protects
 * this instance's pool, and a shared count would cost a round trip to a store per export.
 */
@Injectable()
export class ExportSlots {
  private readonly perUser = new Map<string, number>();
  private running = 0;
  private readonly maxPerUser: number;
  private readonly maxRunning: number;

  constructor(env: Env) {
    this.maxPerUser = env.EXPORT_MAX_PER_USER;
    this.maxRunning = exportMaxConcurrent(env);
  }

  /** Takes a slot for the account, or throws TooManyExportsError; the function returned gives it back (once, however often it is called). */
  take(userId: string): () => void {
    const own = this.perUser.get(userId) ?? 0;
    if (own >= this.maxPerUser) {
      throw new TooManyExportsError(`At most ${this.maxPerUser} exports may run at once for one account. Retry when one has finished.`, 'exports-per-user');
    }
    if (this.running >= this.maxRunning) {
      throw new TooManyExportsError('This instance runs as many exports as it can at once. Retry shortly.', 'exports-per-instance');
    }
    this.perUser.set(userId, own + 1);
    this.running += 1;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.running -= 1;
      const left = (this.perUser.get(userId) ?? 1) - 1;
      if (left > 0) this.perUser.set(userId, left);
      else this.perUser.delete(userId);
    };
  }

  /** Exports running now, for the metrics and tests. */
  get inUse(): number {
    return this.running;
  }
}
