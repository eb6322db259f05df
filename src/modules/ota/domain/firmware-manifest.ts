import { createHash, createPublicKey, verify } from 'node:crypto';

// No imports but node:crypto: the firmware team's signing tool (scripts/firmware-sign.ts) runs this
// very file, so a release it signs is verified against the same bytes.

/** The first line of every manifest: the format, so that a later one can never be mistaken for it. */
export const MANIFEST_FORMAT = 'dcs-firmware-manifest/1';

/** What a signature vouches for: the image and the devices it is meant for, not where it is hosted nor who gets it when. */
export interface ManifestFields {
  version: string;
  /** null: for every hardware. */
  hardwareId: string | null;
  /** 64 hex digits (written lowercase in the manifest). */
  sha256: string;
  size: number;
  /** null: installs from any version. */
  minFromVersion: string | null;
}

/**
 * The exact bytes a release's signature covers (UTF-8): six lines, each ended by "\n", in this order,
 * an absent value written as nothing after the "=":
 *
 *     dcs-firmware-manifest/1
 *     version=0.3.1
 *     hardware=esp32-s3
 *     sha256=<64 lowercase hex digits>
 *     size=<bytes, decimal>
 *     minVersion=
 *
 * docs/gateway.md describes it for firmware.
 */
export function firmwareManifest(fields: ManifestFields): string {
  return [
    MANIFEST_FORMAT,
    `version=${fields.version}`,
    `hardware=${fields.hardwareId ?? ''}`,
    `sha256=${fields.sha256.toLowerCase()}`,
    `size=${fields.size}`,
    `minVersion=${fields.minFromVersion ?? ''}`,
  ]
    .map((line) => `${line}\n`)
    .join('');
}

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the 32-byte key follows it. */
const ED25519_SPKI_PREFIX = Buffer.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]);

/**
 * The 32 raw bytes of an Ed25519 public key given as an SPKI PEM (what `openssl pkey -pubout`
 * writes), as base64 of the raw 32 bytes, or as base64 of the SPKI DER; null for anything else.
 */
export function ed25519PublicKey(text: string): Buffer | null {
  const trimmed = text.trim();
  // Only a public key: node would also derive one from a private key, which must never be sent here.
  if (trimmed.includes('PRIVATE KEY')) return null;
  if (trimmed.startsWith('-----BEGIN PUBLIC KEY-----')) {
    try {
      const key = createPublicKey({ key: trimmed, format: 'pem' });
      if (key.asymmetricKeyType !== 'ed25519') return null;
      return key.export({ format: 'der', type: 'spki' }).subarray(ED25519_SPKI_PREFIX.length);
    } catch {
      return null;
    }
  }
  if (trimmed.startsWith('-----') || !/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return null;
  const bytes = Buffer.from(trimmed, 'base64');
  if (bytes.length === 32) return bytes;
  if (bytes.length === ED25519_SPKI_PREFIX.length + 32 && bytes.subarray(0, ED25519_SPKI_PREFIX.length).equals(ED25519_SPKI_PREFIX)) return bytes.subarray(ED25519_SPKI_PREFIX.length);
  return null;
}

/** A short, stable name of a public key: "ed25519:" and the first 16 hex digits of SHA-256 of its raw bytes. */
export function keyFingerprint(rawPublicKey: Buffer): string {
  return `ed25519:${createHash('sha256').update(rawPublicKey).digest('hex').slice(0, 16)}`;
}

/** The public key as an SPKI PEM, as the service lists it. */
export function publicKeyPem(rawPublicKey: Buffer): string {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, rawPublicKey]), format: 'der', type: 'spki' }).export({ format: 'pem', type: 'spki' }).toString();
}

/** Whether `signature` (64 bytes) is the Ed25519 signature of `manifest`'s UTF-8 bytes by the key. */
export function signatureHolds(rawPublicKey: Buffer, manifest: string, signature: Buffer): boolean {
  if (rawPublicKey.length !== 32 || signature.length !== 64) return false;
  const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, rawPublicKey]), format: 'der', type: 'spki' });
  try {
    return verify(null, Buffer.from(manifest, 'utf8'), key, signature);
  } catch {
    return false;
  }
}
