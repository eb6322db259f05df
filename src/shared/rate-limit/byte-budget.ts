/**
 * A rate of bytes per second that many streams share (a generic cell rate algorithm): each asks
 * before it sends a piece and waits the time it is told, so together they never send faster than
 * the rate, and a budget left idle lets up to `burstMs` worth go at once. A rate of 0 is no limit.
 */
export class ByteBudget {
  /** When the bytes granted so far are paid for, in the caller's milliseconds. */
  private paidUntil = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly bytesPerSec: number,
    private readonly burstMs = 100,
  ) {}

  /** Milliseconds to wait, from `nowMs`, before sending `bytes`; the bytes count as sent from then. */
  delayFor(bytes: number, nowMs: number): number {
    if (this.bytesPerSec === 0) return 0;
    const startsAt = Math.max(this.paidUntil, nowMs - this.burstMs);
    this.paidUntil = startsAt + (bytes * 1000) / this.bytesPerSec;
    return Math.max(0, startsAt - nowMs);
  }
}
