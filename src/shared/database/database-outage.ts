import { Logger } from '@nestjs/common';
import type { UnavailableCause } from './database-errors.js';

/** A busy pool or an overloaded database is over once no request was refused for this long. */
export const BUSY_QUIET_MS = 10_000;

interface Episode {
  since: number;
  last: number;
  refused: number;
}

/**
 * Logs a database outage once when it begins and once when it ends, instead of a line per refused
 * request: a 10 s outage under load used to write hundreds of error lines. An unreachable database
 * is back when a new connection succeeds (`connected`); a busy pool, an overloaded or a read-only
 * database is over when no request was refused for BUSY_QUIET_MS.
 */
export class DatabaseOutage {
  private readonly logger = new Logger('Database');
  private readonly episodes = new Map<UnavailableCause, Episode>();
  private quietTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly now: () => number = Date.now) {}

  /** True while an outage of this cause is under way. */
  isOngoing(cause: UnavailableCause): boolean {
    return this.episodes.has(cause);
  }

  /** A request or a background task could not use the database, for this cause; `code`: the driver's code or reason. */
  refused(cause: UnavailableCause, code: string): void {
    // The service is stopping: what fails while its connections close (an embedded PostgreSQL
    // stopped right after, a job-queue session terminated by it) is the stop, not an outage.
    if (this.stopped) return;
    const now = this.now();
    const episode = this.episodes.get(cause);
    if (episode) {
      episode.refused += 1;
      episode.last = now;
      return;
    }
    this.episodes.set(cause, { since: now, last: now, refused: 1 });
    this.logger.warn({ cause, code }, MESSAGE_OF_CAUSE[cause]);
    if (cause !== 'unreachable') this.scheduleQuietCheck(BUSY_QUIET_MS);
  }

  /** A new connection to the database succeeded: an unreachable database is back. */
  connected(): void {
    this.end('unreachable');
  }

  /** The service is stopping (its database connection closed): nothing is logged from here on. */
  stop(): void {
    this.stopped = true;
    if (this.quietTimer) clearTimeout(this.quietTimer);
    this.quietTimer = null;
  }

  private end(cause: UnavailableCause): void {
    const episode = this.episodes.get(cause);
    if (!episode) return;
    this.episodes.delete(cause);
    this.logger.log({ cause, durationMs: this.now() - episode.since, refused: episode.refused }, 'Database serving again');
  }

  private scheduleQuietCheck(delayMs: number): void {
    if (this.quietTimer) return;
    this.quietTimer = setTimeout(() => {
      this.quietTimer = null;
      let next = Infinity;
      for (const cause of ['pool-busy', 'overloaded', 'read-only'] as const) {
        const episode = this.episodes.get(cause);
        if (!episode) continue;
        const quietFor = this.now() - episode.last;
        if (quietFor >= BUSY_QUIET_MS) this.end(cause);
        else next = Math.min(next, BUSY_QUIET_MS - quietFor);
      }
      if (next !== Infinity) this.scheduleQuietCheck(next);
    }, delayMs);
    this.quietTimer.unref();
  }
}

const MESSAGE_OF_CAUSE: Record<UnavailableCause, string> = {
  unreachable: 'Database unreachable: requests that need it get 503 until a connection succeeds again',
  'pool-busy': 'Database pool busy: requests that found no free connection in time get 503',
  overloaded: 'Database overloaded: statements cancelled after the timeout get 503',
  'read-only': 'Database read-only: writes get 503 (reads still work) until it takes writes again',
};
