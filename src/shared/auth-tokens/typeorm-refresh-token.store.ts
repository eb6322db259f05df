import { IsNull } from 'typeorm';
import type { Orm } from '../database/orm.js';
import { RefreshTokenStore, type NewRefreshToken, type StoredRefreshToken, type Successor } from './refresh-token-store.js';
import type { RefreshTokenColumns } from './refresh-token.columns.js';
import { rotateRefreshTokenSql } from './refresh-token-rotation.sql.js';

/** Refresh tokens of one kind of subject on TypeORM (a cold path); rotation is one SQL statement (refresh-token-rotation.sql.ts). */
export class TypeOrmRefreshTokenStore extends RefreshTokenStore {
  constructor(
    private readonly orm: Orm,
    private readonly record: new () => RefreshTokenColumns,
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
    await this.orm.run((manager) => {
      const familyOfToken = manager.createQueryBuilder().subQuery().select('t.familyId').from(this.record, 't').where('t.tokenHash = :tokenHash').getQuery();
      return manager
        .createQueryBuilder()
        .update(this.record)
        .set({ revokedAt: now })
        .where(`family_id = ${familyOfToken}`)
        .andWhere({ revokedAt: IsNull() })
        .setParameters({ tokenHash })
        .updateEntity(false)
        .execute();
    });
  }

  async revokeAllOf(subjectId: string, now: Date): Promise<void> {
    await this.orm.run((manager) => manager.update(this.record, { subjectId, revokedAt: IsNull() }, { revokedAt: now }));
  }
}
