import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { asDatabaseError, DatabaseUnavailableError } from './database-errors.js';
import type { SqlRunner } from './sql.js';

/**
 * TypeORM's entity manager for the cold paths (firmware releases, device configuration, fleet
 * defaults, allowlist), under the same failure rule as Sql: before the pool is open, and for every error that means the
 * database cannot serve, the caller gets a DatabaseUnavailableError (503 with Retry-After);
 * errors about the statement pass through unchanged.
 */
@Injectable()
export class Orm {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (!this.dataSource.isInitialized) throw new DatabaseUnavailableError('not-connected');
    try {
      return await work(this.dataSource.manager);
    } catch (error) {
      throw asDatabaseError(error);
    }
  }

  /**
   * `work` inside one transaction. `tx` runs plain SQL in that same transaction: what a job queue
   * or an event log writes there commits or rolls back with the entities.
   */
  async transaction<T>(work: (manager: EntityManager, tx: SqlRunner) => Promise<T>): Promise<T> {
    return this.run((root) =>
      root.transaction((manager) => {
        const tx: SqlRunner = { rows: async <R>(text: string, values: unknown[] = []) => (await manager.queryRunner!.query(text, values, true)).records as R[] };
        return work(manager, tx);
      }),
    );
  }
}
