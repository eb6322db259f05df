import { Global, Module, type DynamicModule } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { dataSourceOptions, DEFAULT_CONNECT_TIMEOUT_MS, type DatabaseSettings } from './data-source-options.js';
import { ChangeFeed } from './change-feed.js';
import { DatabaseConnection } from './database-connection.js';
import { DatabaseOutage } from './database-outage.js';
import { Orm } from './orm.js';
import { Sql } from './sql.js';

@Global()
@Module({})
export class DatabaseModule {
  /** `entities`: every module's records (src/schema.ts), for the TypeORM repositories. */
  static register(settings: DatabaseSettings, entities: NonNullable<DataSourceOptions['entities']>): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        // DatabaseConnection opens the data source (after migrations), so that the service also
        // starts while PostgreSQL is down.
        TypeOrmModule.forRoot({ ...dataSourceOptions(settings, entities), manualInitialization: true }),
      ],
      providers: [
        Sql,
        Orm,
        { provide: DatabaseOutage, useFactory: () => new DatabaseOutage() },
        {
          provide: DatabaseConnection,
          inject: [getDataSourceToken(), DatabaseOutage],
          useFactory: (dataSource: DataSource, outage: DatabaseOutage) => new DatabaseConnection(dataSource, settings, outage),
        },
        { provide: ChangeFeed, useFactory: () => new ChangeFeed(settings.url, settings.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS) },
      ],
      exports: [Sql, Orm, DatabaseConnection, DatabaseOutage, ChangeFeed],
    };
  }
}
