import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';

/** Turns readiness off as soon as shutdown begins, so load balancers stop sending traffic. */
@Injectable()
export class ShutdownState {
  private stopping = false;

  constructor(private readonly indicator: HealthIndicatorService) {}

  beginShutdown(): void {
    this.stopping = true;
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  check(key: string): HealthIndicatorResult {
    const indicator = this.indicator.check(key);
    return this.stopping ? indicator.down({ reason: 'shutting down' }) : indicator.up();
  }
}
