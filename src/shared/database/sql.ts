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

  /**
   * Runs `work` only while this instance holds the advisory lock `key`; when another instance holds
   * it, skips and returns undefined. For scheduled jobs that many instances schedule and one should run.
   */
  async exclusively<T>(key: number, work: () => Promise<T>): Promise<T | undefined> {
    const client: PoolClient = await this.pool.connect();
    let broken = false;
    try {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [key]);
      if (!rows[0].locked) return undefined;
      try {
        return await work();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => {
          broken = true; // a dropped session releases its locks anyway
        });
      }
    } finally {
      client.release(broken);
    }
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
