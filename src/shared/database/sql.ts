import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool, PoolClient, QueryConfig } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { asDatabaseError, DatabaseUnavailableError, isDatabaseUnavailable } from './database-errors.js';

import type { SqlRunner } from './sql-runner.js';

export type { SqlRunner } from './sql-runner.js';

/** A transaction that holds its connection until close() (Sql.snapshot). */
export interface HeldSnapshot extends SqlRunner {
  close(): Promise<void>;
}

/**
 * Plain SQL on the pool TypeORM opened. Repositories use it instead of TypeORM's query builder,
 * which costs too much on the device-facing hot paths; `name` makes pg prepare the statement
 * once per connection.
 *
 * The one place where a database that cannot serve becomes a DatabaseUnavailableError (503 with
 * Retry-After): before the pool is open (the service started while PostgreSQL was down), and for
 * every driver error that means "down, starting, unreachable or session killed". Errors that are
 * about the statement (constraint violations, deadlocks) pass through unchanged.
 */
@Injectable()
export class Sql implements SqlRunner {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  private get pool(): Pool {
    if (!this.dataSource.isInitialized) throw new DatabaseUnavailableError('not-connected');
    return (this.dataSource.driver as PostgresDriver).master as Pool;
  }

  rows<T>(text: string, values: unknown[] = [], name?: string): Promise<T[]> {
    return rowsOn<T>(this.pool, text, values, name);
  }

  /**
   * Runs `work` only while this instance holds the advisory lock `key`; when another instance holds
   * it, skips and returns undefined. For scheduled jobs that many instances schedule and one should run.
   */
  async exclusively<T>(key: number, work: () => Promise<T>): Promise<T | undefined> {
    return this.withClient(async (client, markBroken) => {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [key]);
      if (!rows[0].locked) return undefined;
      try {
        return await work();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(markBroken); // a dropped session releases its locks anyway
      }
    });
  }

  async transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T> {
    return this.withClient(async (client, markBroken) => {
      const tx: SqlRunner = {
        rows: async <R>(text: string, values: unknown[] = [], name?: string) =>
          (await client.query(queryConfig(text, values, name))).rows as R[],
      };
      await client.query('BEGIN');
      try {
        const result = await work(tx);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        // A session that is gone has rolled back already: closing it is all that is left to do.
        if (isDatabaseUnavailable(error)) markBroken();
        else await client.query('ROLLBACK').catch(markBroken);
        throw error;
      }
    });
  }

  /**
   * Runs `COPY … TO STDOUT` and hands each piece of its output to `sink` as it arrives, as the
   * bytes PostgreSQL sent: with FORMAT binary, bytea without text to decode, and no string made
   * per row. The pieces are only valid during the call. `text` cannot take parameters: whatever
   * values it holds, the caller has checked.
   */
  copyOut(text: string, sink: (piece: Buffer) => void): Promise<void> {
    return this.withClient(async (client) => {
      const stream = client.query(copyTo(text));
      await new Promise<void>((resolve, reject) => {
        stream.on('data', sink);
        stream.once('end', resolve);
        stream.once('error', reject);
      });
    });
  }

  /**
   * A read-only REPEATABLE READ transaction on a client of its own, held until close(): for a read
   * too large to answer from one statement (a cursor fetched batch by batch), whose statements must
   * all see the same snapshot. The caller must close() it, whatever happens; close() is safe to
   * call more than once. While it is open it holds one of the pool's connections.
   */
  snapshot(): Promise<HeldSnapshot> {
    return snapshotOn(this.pool);
  }

  /**
   * A client of its own for `use`. While it is checked out the pool does not listen to its errors,
   * and a session killed between two statements (pg_terminate_backend, a restart) would otherwise
   * raise an unhandled 'error' event and take the process down. A broken client is closed, not
   * returned to the pool.
   */
  private async withClient<T>(use: (client: PoolClient, markBroken: () => void) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw asDatabaseError(error);
    }
    let broken = false;
    const markBroken = () => {
      broken = true;
    };
    client.on('error', markBroken);
    try {
      return await use(client, markBroken);
    } catch (error) {
      if (isDatabaseUnavailable(error)) broken = true;
      throw asDatabaseError(error);
    } finally {
      client.removeListener('error', markBroken);
      client.release(broken);
    }
  }
}

/** A statement for pg: prepared once per connection under `name` when it has one. */
function queryConfig(text: string, values: unknown[], name: string | undefined): QueryConfig {
  return name ? { name, text, values } : { text, values };
}

/** One statement on `pool` (Sql's, or a replica's), under Sql's failure rule. */
export async function rowsOn<T>(pool: Pool, text: string, values: unknown[] = [], name?: string): Promise<T[]> {
  try {
    const result = await pool.query(queryConfig(text, values, name));
    return result.rows as T[];
  } catch (error) {
    throw asDatabaseError(error);
  }
}

/** Sql.snapshot() on `pool` (Sql's, or a replica's). */
export async function snapshotOn(pool: Pool): Promise<HeldSnapshot> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw asDatabaseError(error);
  }
  let broken = false;
  let closed: Promise<void> | null = null;
  const markBroken = () => {
    broken = true;
  };
  client.on('error', markBroken);
  const run = async <R>(text: string, values: unknown[] = [], name?: string): Promise<R[]> => {
    if (closed) throw new Error('The snapshot is closed.');
    try {
      return (await client.query(queryConfig(text, values, name))).rows as R[];
    } catch (error) {
      if (isDatabaseUnavailable(error)) broken = true;
      throw asDatabaseError(error);
    }
  };
  const close = (): Promise<void> => {
    closed ??= (async () => {
      // A read-only transaction changes nothing: ending it is only to hand the connection back clean.
      if (!broken) await client.query('ROLLBACK').catch(markBroken);
      client.removeListener('error', markBroken);
      client.release(broken);
    })();
    return closed;
  };
  try {
    await run('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  } catch (error) {
    await close();
    throw error;
  }
  return { rows: run, close };
}
