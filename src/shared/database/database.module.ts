import { Global, Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { dataSourceOptions, type DatabaseSettings } from './data-source-options.js';
import { ChangeFeed } from './change-feed.js';
import { Sql } from './sql.js';

@Global()
@Module({})
export class DatabaseModule {
  static register(settings: DatabaseSettings): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRoot({
          ...dataSourceOptions(settings),
          // Retries cover an instance that starts before its database is reachable.
          retryAttempts: Number.MAX_SAFE_INTEGER,
          retryDelay: 2000,
        }),
      ],
      providers: [Sql, { provide: ChangeFeed, useFactory: () => new ChangeFeed(settings.url) }],
      exports: [Sql, ChangeFeed],
    };
  }
}
