import { Injectable } from '@nestjs/common';
import { Sql, type SqlRunner } from '../../../shared/database/sql.js';
import type { DeviceShare, ShareRole } from '../domain/device-share.js';
import { CHANGE_CHANNEL, ChangeFeed } from '../../../shared/database/change-feed.js';
import { type ShareChange, shareChangesKey, SHARES_TOPIC, ShareStore, type ShareStored, type UpsertResult } from '../domain/share.store.js';
import { ACCOUNT_SUMMARIES } from '../../accounts/sql-api.js';
import { DEVICE_OWNERS } from '../../devices/sql-api.js';
import { ORGANIZATION_ACCOUNTS } from '../../organizations/sql-api.js';
import { SHARED_WITH } from '../sql-api.js';

interface ShareRow {
  share_id: string;
  device_id: string;
  email: string | null;
  organization_id: string | null;
  role: ShareRole;
  created_at: Date;
}

const COLUMNS = 'share_id, device_id, email, organization_id, role, created_at';

const toShare = (row: ShareRow): DeviceShare => ({
  shareId: row.share_id,
  deviceId: row.device_id,
  email: row.email,
  organizationId: row.organization_id,
  role: row.role,
  createdAt: row.created_at,
});

/** A share changed: its account (bound address), or its organization (every bound member's). */
type Changed = { user_id: string | null; organization_id: string | null; device_id: string };
const CHANGED = 'user_id, organization_id, device_id';

/** The accounts whose shares the rows changed: the bound address's, and every bound member's of an organization shared with. */
async function changesOf(tx: SqlRunner, rows: Changed[]): Promise<ShareChange[]> {
  const changes = rows.flatMap((row) => (row.user_id === null ? [] : [{ userId: row.user_id, deviceId: row.device_id }]));
  const shared = rows.filter((row) => row.organization_id !== null);
  if (shared.length === 0) return changes;
  // One statement for every organization's members, however many rows.
  const members = await tx.rows<{ user_id: string; device_id: string }>(
    `SELECT a.user_id, r.device_id FROM unnest($1::uuid[], $2::text[]) AS r (organization_id, device_id) CROSS JOIN LATERAL ${ORGANIZATION_ACCOUNTS}(r.organization_id) a`,
    [shared.map((row) => row.organization_id), shared.map((row) => row.device_id)],
  );
  return [...changes, ...members.map((member) => ({ userId: member.user_id, deviceId: member.device_id }))];
}

/** Tells every instance (this one too, through the feed's own connection), at commit, whose shares changed. */
async function announce(tx: SqlRunner, changes: ShareChange[]): Promise<void> {
  if (changes.length > 0) await tx.rows('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, `${SHARES_TOPIC}:${shareChangesKey(changes)}`]);
}

@Injectable()
export class SqlShareStore extends ShareStore {
  constructor(
    private readonly sql: Sql,
    private readonly feed: ChangeFeed,
  ) {
    super();
  }

  /** After a commit of this instance: its own streams hear of it before the answer goes out, not only when the notification comes back. */
  private committed(changes: ShareChange[]): void {
    if (changes.length > 0) this.feed.changed(SHARES_TOPIC, shareChangesKey(changes));
  }

  async ownerEmail(ownerId: string, deviceId: string): Promise<string | null> {
    const [row] = await this.sql.rows<{ email: string }>(`SELECT u.email FROM ${DEVICE_OWNERS} d JOIN ${ACCOUNT_SUMMARIES} u ON u.user_id = d.owner_id WHERE d.device_id = $1 AND d.owner_id = $2`, [deviceId, ownerId]);
    return row?.email ?? null;
  }

  async upsert(share: DeviceShare, grantedBy: string, max: number, onStored?: ShareStored): Promise<UpsertResult> {
    const changes: ShareChange[] = [];
    const result = await this.sql.transaction(async (tx): Promise<UpsertResult> => {
      // The device row, locked: the owner cannot change, nor two shares both pass the limit, until commit.
      const owned = await tx.rows(`SELECT 1 FROM ${DEVICE_OWNERS} WHERE device_id = $1 AND owner_id = $2 FOR UPDATE`, [share.deviceId, grantedBy]);
      if (owned.length === 0) return { kind: 'not-owner' };
      // Every other recipient's share counts against the limit (an address, or an organization).
      const [{ count }] = await tx.rows<{ count: number }>(
        'SELECT count(*)::int AS count FROM device_shares WHERE device_id = $1 AND granted_by = $2 AND email IS DISTINCT FROM $3::varchar AND organization_id IS DISTINCT FROM $4::uuid',
        [share.deviceId, grantedBy, share.email, share.organizationId],
      );
      if (count >= max) return { kind: 'too-many' };
      // A share left by an earlier owner (none survive a release; an ownership change by other means) is replaced as new.
      const [row] = await tx.rows<ShareRow & Changed & { inserted: boolean }>(
        `INSERT INTO device_shares (share_id, device_id, granted_by, email, organization_id, user_id, role, created_at)
         VALUES ($1, $2, $3, $4::varchar, $5::uuid, (SELECT user_id FROM ${ACCOUNT_SUMMARIES} WHERE email = $4::varchar AND email_verified), $6, $7)
         ON CONFLICT (device_id, ${share.organizationId === null ? 'email' : 'organization_id'}) DO UPDATE SET
           role = EXCLUDED.role,
           user_id = EXCLUDED.user_id,
           share_id = CASE WHEN device_shares.granted_by = EXCLUDED.granted_by THEN device_shares.share_id ELSE EXCLUDED.share_id END,
           created_at = CASE WHEN device_shares.granted_by = EXCLUDED.granted_by THEN device_shares.created_at ELSE EXCLUDED.created_at END,
           granted_by = EXCLUDED.granted_by
         RETURNING ${COLUMNS}, user_id, (xmax = 0) AS inserted`,
        [share.shareId, share.deviceId, grantedBy, share.email, share.organizationId, share.role, share.createdAt],
      );
      changes.push(...(await changesOf(tx, [row])));
      await announce(tx, changes);
      await onStored?.(tx, toShare(row), row.inserted);
      return { kind: row.inserted ? 'created' : 'updated', share: toShare(row) };
    });
    this.committed(changes);
    return result;
  }

  async list(ownerId: string, deviceId: string, limit: number, after: { createdAt: Date; shareId: string } | null): Promise<DeviceShare[]> {
    const rows = await this.sql.rows<ShareRow>(
      `SELECT ${COLUMNS} FROM device_shares
        WHERE device_id = $1 AND granted_by = $2 AND ($3::timestamptz IS NULL OR (created_at, share_id) > ($3::timestamptz, $4::uuid))
        ORDER BY created_at, share_id LIMIT $5`,
      [deviceId, ownerId, after?.createdAt ?? null, after?.shareId ?? null, limit],
    );
    return rows.map(toShare);
  }

  async delete(ownerId: string, deviceId: string, shareId: string, onDeleted?: (tx: SqlRunner) => Promise<void>): Promise<boolean> {
    const rows = await this.sql.transaction(async (tx) => {
      const deleted = await tx.rows<Changed>(`DELETE FROM device_shares WHERE share_id = $1 AND device_id = $2 AND granted_by = $3 RETURNING ${CHANGED}`, [shareId, deviceId, ownerId]);
      const changes = await changesOf(tx, deleted);
      await announce(tx, changes);
      if (deleted.length > 0) await onDeleted?.(tx);
      return { deleted: deleted.length > 0, changes };
    });
    this.committed(rows.changes);
    return rows.deleted;
  }

  async deleteOfDevice(tx: SqlRunner, deviceId: string): Promise<void> {
    const rows = await tx.rows<Changed>(`DELETE FROM device_shares WHERE device_id = $1 RETURNING ${CHANGED}`, [deviceId]);
    await announce(tx, await changesOf(tx, rows));
  }

  async bind(userId: string, email: string): Promise<number> {
    const rows = await this.sql.transaction(async (tx) => {
      const bound = await tx.rows<Changed>(`UPDATE device_shares SET user_id = $1 WHERE email = $2 AND user_id IS NULL RETURNING ${CHANGED}`, [userId, email]);
      const changes = await changesOf(tx, bound);
      await announce(tx, changes);
      return changes;
    });
    this.committed(rows);
    return rows.length;
  }

  async deleteOfUser(tx: SqlRunner, userId: string): Promise<number> {
    // Announced at the commit of the caller's transaction (an account deletion), to every instance this one included.
    const deleted = await tx.rows<Changed>(
      `DELETE FROM device_shares
        WHERE granted_by = $1 OR user_id = $1 OR (user_id IS NULL AND email = (SELECT email FROM ${ACCOUNT_SUMMARIES} WHERE user_id = $1))
        RETURNING ${CHANGED}`,
      [userId],
    );
    await announce(tx, await changesOf(tx, deleted));
    return deleted.length;
  }

  async activeOf(userId: string): Promise<Map<string, string>> {
    const rows = await this.sql.rows<{ device_id: string; owner_id: string }>(`SELECT device_id, owner_id FROM ${SHARED_WITH}($1::uuid)`, [userId]);
    return new Map(rows.map((row) => [row.device_id, row.owner_id]));
  }
}
