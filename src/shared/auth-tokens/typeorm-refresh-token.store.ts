import { IsNull } from 'typeorm';
import type { Orm } from '../database/orm.js';
import { RefreshTokenStore, type NewRefreshToken, type StoredRefreshToken, type Successor } from './refresh-token-store.js';
import type { RefreshTokenColumns } from './refresh-token.columns.js';
import { rotateRefreshTokenSql } from './refresh-token-rotation.sql.js';

/**
 * Refresh tokens of one kind of subject on TypeORM (a cold path); rotation is one SQL statement
 * (refresh-token-rotation.sql.ts). `revoked` hears, after the commit, whose sessions a revocation
 * ended (a cache of live sessions on this instance forgets them at once).
 */
export class TypeOrmRefreshTokenStore extends RefreshTokenStore {
  constructor(
    private readonly orm: Orm,
    private readonly record: new () => RefreshTokenColumns,
    private readonly revoked: (subjectId: string) => void = () => undefined,
  ) {
    super();
  }

  async insert(token: NewRefreshToken): Promise<void> {
    await this.orm.run((manager) =>
      manager
        .createQueryBuilder()
        .insert()
        .into(this.record)
        .values({ subjectId: token.subjectId, tokenVersion: token.tokenVersion, familyId: token.familyId, tokenHash: token.tokenHash, issuedAt: token.issuedAt, expiresAt: token.expiresAt })
        .updateEntity(false)
        .execute(),
    );
  }

  async findByHash(tokenHash: string): Promise<StoredRefreshToken | null> {
    const record = await this.orm.run((manager) => manager.findOneBy(this.record, { tokenHash }));
    return record
      ? {
          id: record.id,
          subjectId: record.subjectId,
          tokenVersion: record.tokenVersion,
          familyId: record.familyId,
          expiresAt: record.expiresAt,
          rotatedAt: record.rotatedAt,
          revokedAt: record.revokedAt,
        }
      : null;
  }

  async rotate(id: string, successor: Successor, now: Date): Promise<boolean> {
    const rows = await this.orm.run((manager) => {
      const metadata = manager.connection.getMetadata(this.record);
      const subjectColumn = metadata.findColumnWithPropertyName('subjectId')!.databaseName;
      return manager.query<{ id: string }[]>(rotateRefreshTokenSql(metadata.tableName, subjectColumn), [id, now, successor.tokenHash, successor.expiresAt]);
    });
    return rows.length === 1;
  }

  async revokeFamilyOf(tokenHash: string, now: Date): Promise<void> {
    // One statement: the family is looked up and revoked together.
    const subjects = await this.orm.run((manager) => {
      const metadata = manager.connection.getMetadata(this.record);
      const subjectColumn = metadata.findColumnWithPropertyName('subjectId')!.databaseName;
      return manager.query<{ subject_id: string }[]>(
        // A SELECT around the UPDATE: TypeORM answers rows for it (for a bare UPDATE, [rows, count]).
        `WITH revoked AS (
           UPDATE ${metadata.tableName} SET revoked_at = $2
            WHERE family_id = (SELECT family_id FROM ${metadata.tableName} WHERE token_hash = $1) AND revoked_at IS NULL
            RETURNING ${subjectColumn} AS subject_id
         )
         SELECT DISTINCT subject_id FROM revoked`,
        [tokenHash, now],
      );
    });
    for (const row of subjects) this.revoked(row.subject_id);
  }

  async revokeAllOf(subjectId: string, now: Date): Promise<void> {
    await this.orm.run((manager) => manager.update(this.record, { subjectId, revokedAt: IsNull() }, { revokedAt: now }));
    this.revoked(subjectId);
  }
}
