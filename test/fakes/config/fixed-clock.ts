import { Clock } from '../../../src/config/config.module.js';

/** A clock that stands still until a test moves it: time-dependent rules without waiting. */
export class FixedClock extends Clock {
  constructor(private current: Date) {
    super();
  }

  now(): Date {
    return this.current;
  }

  advanceSec(seconds: number): void {
    this.current = new Date(this.current.getTime() + seconds * 1000);
  }
}
