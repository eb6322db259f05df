import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DatabaseHealth } from './database-health.js';
import { HealthController } from './health.controller.js';
import { ShutdownState } from './shutdown-state.js';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json', gracefulShutdownTimeoutMs: 0 })],
  controllers: [HealthController],
  providers: [ShutdownState, DatabaseHealth],
  exports: [ShutdownState],
})
export class HealthModule {}
