import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/** A public key of the firmware team, against which signed releases verify. */
export interface FirmwareSigningKey {
  keyId: string;
  /** The raw 32 bytes of the Ed25519 key. */
  publicKey: Buffer;
  fingerprint: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** A release a revocation paused. */
export interface PausedRelease {
  id: string;
  version: string;
}

/** The firmware_signing_keys table, and the pause of releases a revoked key signed. */
export abstract class FirmwareSigningKeyStore {
  /** Stores the key, and runs `onAdded` in the same transaction; the key already stored under its id when the id is taken. */
  abstract add(key: FirmwareSigningKey, onAdded: (tx: SqlRunner) => Promise<void>): Promise<{ added: boolean; key: FirmwareSigningKey }>;
  abstract find(keyId: string): Promise<FirmwareSigningKey | null>;
  /** Up to `limit` keys, the newest first (by creation, then key id), after `after` when given. */
  abstract list(limit: number, after?: { createdAt: Date; keyId: string }): Promise<FirmwareSigningKey[]>;
  /**
   * Revokes the key (once) and pauses every live release it signed, in one transaction with
   * `onRevoked`; null when no key has the id. A revoked key is answered as it is, pausing nothing.
   */
  abstract revoke(keyId: string, now: Date, onRevoked: (tx: SqlRunner, paused: PausedRelease[]) => Promise<void>): Promise<{ key: FirmwareSigningKey; paused: PausedRelease[] } | null>;
  /**
   * Within a publishing transaction: whether the key is live, holding it so that a revocation
   * waits for the transaction (and then pauses the release it published).
   */
  abstract holdLive(tx: SqlRunner, keyId: string): Promise<boolean>;
}
