import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DatabaseHealth } from './database-health.js';
import { HealthController } from './health.controller.js';
import { ShutdownState } from './shutdown-state.js';

@Module({
  // A failed readiness probe is an answer, not an error: an outage is logged once (DatabaseOutage),
  // a drain by main.ts.
  imports: [TerminusModule.forRoot({ logger: false, gracefulShutdownTimeoutMs: 0 })],
  controllers: [HealthController],
  providers: [ShutdownState, DatabaseHealth],
  exports: [ShutdownState],
})
export class HealthModule {}
