import { Global, Module, type DynamicModule } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import type { Pool } from 'pg';
import type { DataSource, DataSourceOptions } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { dataSourceOptions, DEFAULT_CONNECT_TIMEOUT_MS, type DatabaseSettings } from './data-source-options.js';
import { ChangeFeed } from './change-feed.js';
import { DatabaseConnection } from './database-connection.js';
import { DatabaseOutage } from './database-outage.js';
import { Orm } from './orm.js';
import { ReadReplicas } from './read-replicas.js';
import { ReplicaSql } from './replica-sql.js';
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
        ReplicaSql,
        {
          provide: ReadReplicas,
          inject: [getDataSourceToken()],
          useFactory: (dataSource: DataSource) =>
            new ReadReplicas(settings.replicas ?? { urls: [], maxLagMs: 5000, checkIntervalMs: 1000 }, settings, () =>
              dataSource.isInitialized ? ((dataSource.driver as PostgresDriver).master as Pool) : null,
            ),
        },
        { provide: DatabaseOutage, useFactory: () => new DatabaseOutage() },
        {
          provide: DatabaseConnection,
          inject: [getDataSourceToken(), DatabaseOutage],
          useFactory: (dataSource: DataSource, outage: DatabaseOutage) => new DatabaseConnection(dataSource, settings, outage),
        },
        { provide: ChangeFeed, useFactory: () => new ChangeFeed(settings.url, settings.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS) },
      ],
      exports: [Sql, Orm, ReplicaSql, ReadReplicas, DatabaseConnection, DatabaseOutage, ChangeFeed],
    };
  }
}
