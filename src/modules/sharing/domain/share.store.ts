import { pairsKey, parsePairs } from '../../../shared/database/change-feed.js';
import type { SqlRunner } from '../../../shared/database/sql.js';
import type { DeviceShare } from './device-share.js';

/**
 * The ChangeFeed topic every change of who holds a share is announced on, at its commit, to every
 * instance (the streams of the accounts concerned drop the device, then read their shares again).
 * Key: entries `<userId> <deviceId>` joined by commas; `*` for "reread every share".
 */
export const SHARES_TOPIC = 'device_shares';

export interface ShareChange {
  userId: string;
  deviceId: string;
}

export function shareChangesKey(changes: ShareChange[]): string {
  return pairsKey(changes.map((change) => [change.userId, change.deviceId] as const));
}

export function parseShareChanges(key: string): ShareChange[] | '*' {
  const pairs = parsePairs(key);
  return pairs === '*' ? '*' : pairs.map(([userId, deviceId]) => ({ userId, deviceId }));
}

export type UpsertResult = { kind: 'created' | 'updated'; share: DeviceShare } | { kind: 'not-owner' } | { kind: 'too-many' };

/** Runs in the transaction that stored a share (created, or its role changed), before the commit. */
export type ShareStored = (tx: SqlRunner, share: DeviceShare, created: boolean) => Promise<void>;

export abstract class ShareStore {
  /** The owner's e-mail when `ownerId` owns the device, else null. */
  abstract ownerEmail(ownerId: string, deviceId: string): Promise<string | null>;

  /**
   * Shares the device with `email` (bound at once to a verified account with that address), or
   * changes the role of the owner's existing share with it; under a lock of the device row, so the
   * owner checked is the owner granting, and the limit holds under concurrency.
   */
  abstract upsert(share: DeviceShare, grantedBy: string, max: number, onStored?: ShareStored): Promise<UpsertResult>;

  /** The owner's shares of the device, oldest first, after `after` (createdAt, shareId), at most `limit`. */
  abstract list(ownerId: string, deviceId: string, limit: number, after: { createdAt: Date; shareId: string } | null): Promise<DeviceShare[]>;

  abstract delete(ownerId: string, deviceId: string, shareId: string, onDeleted?: (tx: SqlRunner) => Promise<void>): Promise<boolean>;

  /** Ends every share of the device, in the caller's transaction (a release). */
  abstract deleteOfDevice(tx: SqlRunner, deviceId: string): Promise<void>;

  /** Binds the shares waiting for `email` to the account that just verified it. */
  abstract bind(userId: string, email: string): Promise<number>;

  /** Every share `userId` granted or holds, and those waiting for their address. */
  abstract deleteOfUser(tx: SqlRunner, userId: string): Promise<number>;

  /** Devices the user holds an active share of, with the owner who granted each (the stream's live filter). */
  abstract activeOf(userId: string): Promise<Map<string, string>>;
}
