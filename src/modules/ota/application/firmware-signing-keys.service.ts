import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { DomainError, NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import { ed25519PublicKey, keyFingerprint } from '../domain/firmware-manifest.js';
import { FirmwareSigningKeyStore, type FirmwareSigningKey, type PausedRelease } from '../domain/firmware-signing-key.store.js';

export class SigningKeyExistsError extends DomainError {
  constructor() {
    super('SIGNING_KEY_EXISTS', 'conflict', 'A different signing key is registered under this keyId; choose another keyId.');
  }
}

/**
 * The firmware team's public keys. Only public keys reach the service: the private key stays with
 * the firmware team (npm run firmware:sign). Revoking a key pauses the releases it signed.
 */
@Injectable()
export class FirmwareSigningKeysService {
  constructor(
    private readonly keys: FirmwareSigningKeyStore,
    private readonly clock: Clock,
    private readonly audit: AuditLog,
  ) {}

  /** Registers the key; the same key again under the same id is answered as it is (added: false). */
  async register(by: AuditContext, keyId: string, publicKey: string): Promise<{ added: boolean; key: FirmwareSigningKey }> {
    const raw = ed25519PublicKey(publicKey);
    if (!raw) throw new ValidationFailedError([{ field: 'publicKey', message: 'publicKey must be an Ed25519 public key: an SPKI PEM, or base64 of its 32 bytes' }]);
    const now = this.clock.now();
    const fingerprint = keyFingerprint(raw);
    const result = await this.keys.add({ keyId, publicKey: raw, fingerprint, createdAt: now, revokedAt: null }, (tx) =>
      this.audit.record(tx, { by, action: 'firmware.signing_key_added', target: `firmware_signing_key:${keyId}`, detail: { fingerprint }, at: now }),
    );
    if (!result.added && !result.key.publicKey.equals(raw)) throw new SigningKeyExistsError();
    return result;
  }

  list(limit: number, after?: { createdAt: Date; keyId: string }): Promise<FirmwareSigningKey[]> {
    return this.keys.list(limit, after);
  }

  /** Revokes the key and pauses every release it signed that is still offered; again: nothing more. */
  async revoke(by: AuditContext, keyId: string): Promise<{ key: FirmwareSigningKey; paused: PausedRelease[] }> {
    const now = this.clock.now();
    const revoked = await this.keys.revoke(keyId, now, (tx, paused) =>
      this.audit.record(tx, { by, action: 'firmware.signing_key_revoked', target: `firmware_signing_key:${keyId}`, detail: { pausedReleases: paused.map((release) => release.id) }, at: now }),
    );
    if (!revoked) throw new NotFoundError('No signing key has this keyId.');
    return revoked;
  }
}
