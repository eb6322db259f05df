import { Clock } from '../../../src/config/config.module.js';

/**
 * The system's time plus however far a test moved it: for a running service whose timers and
 * clients keep real time, while the rules that read the Clock (windows, graces, expiries) are
 * moved past their edge without waiting.
 */
export class OffsetClock extends Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advanceMs(ms: number): void {
    this.offsetMs += ms;
  }

  /** Back to the system's time. */
  reset(): void {
    this.offsetMs = 0;
  }
}
