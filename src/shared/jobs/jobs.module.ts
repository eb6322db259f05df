import { Global, Module, type DynamicModule } from '@nestjs/common';
import { Clock } from '../../config/config.module.js';
import { DatabaseConnection } from '../database/database-connection.js';
import { JobQueue } from './job-queue.js';

@Global()
@Module({})
export class JobsModule {
  static register(settings: { url: string; pollIntervalMs: number }): DynamicModule {
    return {
      module: JobsModule,
      providers: [{ provide: JobQueue, inject: [DatabaseConnection, Clock], useFactory: (database: DatabaseConnection, clock: Clock) => new JobQueue(settings, database, clock) }],
      exports: [JobQueue],
    };
  }
}
