import { Global, Module, type DynamicModule } from '@nestjs/common';
import { DatabaseConnection } from '../database/database-connection.js';
import { JobQueue } from './job-queue.js';

@Global()
@Module({})
export class JobsModule {
  static register(settings: { url: string; pollIntervalMs: number }): DynamicModule {
    return {
      module: JobsModule,
      providers: [{ provide: JobQueue, inject: [DatabaseConnection], useFactory: (database: DatabaseConnection) => new JobQueue(settings, database) }],
      exports: [JobQueue],
    };
  }
}
