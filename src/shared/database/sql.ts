import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool, PoolClient, QueryConfig } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

export interface SqlRunner {
  rows<T>(text: string, values?: unknown[], name?: string): Promise<T[]>;
}

/**
 * Plain SQL on the pool TypeORM opened. Repositories use it instead of TypeORM's query builder,
 * which costs too much on the device-facing hot paths; `name` makes pg prepare the statement
 * once per connection.
 */
@Injectable()
export class Sql implements SqlRunner {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  private get pool(): Pool {
    return (this.dataSource.driver as PostgresDriver).master as Pool;
  }

  async rows<T>(text: string, values: unknown[] = [], name?: string): Promise<T[]> {
    const config: QueryConfig = name ? { name, text, values } : { text, values };
    const result = await this.pool.query(config);
    return result.rows as T[];
  }

  async transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T> {
    const client: PoolClient = await this.pool.connect();
    const tx: SqlRunner = {
      rows: async <R>(text: string, values: unknown[] = [], name?: string) =>
        (await client.query(name ? { name, text, values } : { text, values })).rows as R[],
    };
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await work(tx);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }
}
