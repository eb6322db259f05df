import { Injectable } from '@nestjs/common';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { Sql } from '../../../shared/database/sql.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { FirmwareSigningKeyStore, type FirmwareSigningKey, type PausedRelease } from '../domain/firmware-signing-key.store.js';

interface KeyRow {
  key_id: string;
  public_key: Buffer;
  fingerprint: string;
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = 'key_id, public_key, fingerprint, created_at, revoked_at';
const toKey = (row: KeyRow): FirmwareSigningKey => ({ keyId: row.key_id, publicKey: row.public_key, fingerprint: row.fingerprint, createdAt: row.created_at, revokedAt: row.revoked_at });

/** Signing keys in plain SQL: a revocation's pause of releases must be one transaction with it. */
@Injectable()
export class SqlFirmwareSigningKeyStore extends FirmwareSigningKeyStore {
  constructor(
    private readonly sql: Sql,
    private readonly feed: ChangeFeed,
  ) {
    super();
  }

  add(key: FirmwareSigningKey, onAdded: (tx: SqlRunner) => Promise<void>): Promise<{ added: boolean; key: FirmwareSigningKey }> {
    return this.sql.transaction(async (tx) => {
      const [inserted] = await tx.rows<KeyRow>(
        `INSERT INTO firmware_signing_keys (key_id, public_key, fingerprint, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (key_id) DO NOTHING RETURNING ${COLUMNS}`,
        [key.keyId, key.publicKey, key.fingerprint, key.createdAt],
      );
      if (inserted) {
        await onAdded(tx);
        return { added: true, key: toKey(inserted) };
      }
      const [existing] = await tx.rows<KeyRow>(`SELECT ${COLUMNS} FROM firmware_signing_keys WHERE key_id = $1`, [key.keyId]);
      return { added: false, key: toKey(existing) };
    });
  }

  async find(keyId: string): Promise<FirmwareSigningKey | null> {
    const [row] = await this.sql.rows<KeyRow>(`SELECT ${COLUMNS} FROM firmware_signing_keys WHERE key_id = $1`, [keyId]);
    return row ? toKey(row) : null;
  }

  async list(limit: number, after?: { createdAt: Date; keyId: string }): Promise<FirmwareSigningKey[]> {
    const rows = await this.sql.rows<KeyRow>(
      `SELECT ${COLUMNS} FROM firmware_signing_keys
        WHERE $2::timestamptz IS NULL OR (created_at, key_id) < ($2, $3::text)
        ORDER BY created_at DESC, key_id DESC LIMIT $1`,
      [limit, after?.createdAt ?? null, after?.keyId ?? ''],
    );
    return rows.map(toKey);
  }

  async revoke(keyId: string, now: Date, onRevoked: (tx: SqlRunner, paused: PausedRelease[]) => Promise<void>): Promise<{ key: FirmwareSigningKey; paused: PausedRelease[] } | null> {
    const result = await this.sql.transaction(async (tx) => {
      // The row lock orders this after every publishing transaction that holds the key (holdLive).
      const [row] = await tx.rows<KeyRow>(`SELECT ${COLUMNS} FROM firmware_signing_keys WHERE key_id = $1 FOR UPDATE`, [keyId]);
      if (!row) return null;
      if (row.revoked_at !== null) return { key: toKey(row), paused: [] };
      const [revoked] = await tx.rows<KeyRow>(`UPDATE firmware_signing_keys SET revoked_at = $2 WHERE key_id = $1 RETURNING ${COLUMNS}`, [keyId, now]);
      const paused = await tx.rows<PausedRelease>(
        `UPDATE firmware_releases SET paused = true, updated_at = $2
          WHERE signing_key_id = $1 AND NOT revoked AND NOT paused
          RETURNING id, version`,
        [keyId, now],
      );
      await onRevoked(tx, paused);
      return { key: toKey(revoked), paused };
    });
    if (result && result.paused.length > 0) this.feed.changed('firmware_releases');
    return result;
  }

  async holdLive(tx: SqlRunner, keyId: string): Promise<boolean> {
    const [row] = await tx.rows<{ live: boolean }>('SELECT revoked_at IS NULL AS live FROM firmware_signing_keys WHERE key_id = $1 FOR SHARE', [keyId]);
    return row?.live ?? false;
  }
}
