import { generateKeyPairSync, sign } from 'node:crypto';
import fc from 'fast-check';
import { MANIFEST_FORMAT, ed25519PublicKey, firmwareManifest, keyFingerprint, publicKeyPem, signatureHolds, type ManifestFields } from './firmware-manifest.js';

const SHA256 = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';

function anEd25519Key() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const spkiDer = publicKey.export({ format: 'der', type: 'spki' });
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return { privateKey, raw, spkiDer, pem: publicKey.export({ format: 'pem', type: 'spki' }).toString() };
}

describe('firmwareManifest', () => {
  it('writes the six lines of a full manifest, each ended by "\\n", the sha256 lowercased', () => {
    const manifest = firmwareManifest({ version: '0.3.1', hardwareId: 'esp32-s3', sha256: SHA256.toUpperCase(), size: 1048576, minFromVersion: '0.2.0' });

    expect(manifest).toBe(
      'dcs-firmware-manifest/1\n' +
        'version=0.3.1\n' +
        'hardware=esp32-s3\n' +
        'sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n' +
        'size=1048576\n' +
        'minVersion=0.2.0\n',
    );
  });

  it('writes an absent hardware and minimum version as nothing after the "="', () => {
    const manifest = firmwareManifest({ version: '1.0', hardwareId: null, sha256: SHA256, size: 1, minFromVersion: null });

    expect(manifest).toBe('dcs-firmware-manifest/1\nversion=1.0\nhardware=\nsha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\nsize=1\nminVersion=\n');
  });

  it('any fields: exactly six lines, which read back give the fields', () => {
    const version = fc.array(fc.integer({ min: 0, max: 999_999_999 }), { minLength: 2, maxLength: 4 }).map((parts) => parts.join('.'));
    const noLineBreak = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 128 }).filter((text) => !text.includes('\n'));
    const fields: fc.Arbitrary<ManifestFields> = fc.record({
      version,
      hardwareId: fc.option(noLineBreak, { nil: null }),
      sha256: fc.stringMatching(/^[0-9a-fA-F]{64}$/),
      size: fc.integer({ min: 1, max: 2_147_483_647 }),
      minFromVersion: fc.option(version, { nil: null }),
    });

    fc.assert(
      fc.property(fields, (given) => {
        const manifest = firmwareManifest(given);
        expect(manifest.endsWith('\n')).toBe(true);
        const lines = manifest.slice(0, -1).split('\n');
        expect(lines).toHaveLength(6);
        expect(lines[0]).toBe(MANIFEST_FORMAT);
        const entries = lines.slice(1).map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]);
        expect(entries.map(([name]) => name)).toEqual(['version', 'hardware', 'sha256', 'size', 'minVersion']);
        const value = Object.fromEntries(entries) as Record<string, string>;
        expect({
          version: value.version,
          hardwareId: value.hardware === '' ? null : value.hardware,
          sha256: value.sha256,
          size: Number(value.size),
          minFromVersion: value.minVersion === '' ? null : value.minVersion,
        }).toEqual({ ...given, sha256: given.sha256.toLowerCase() });
      }),
    );
  });
});

describe('ed25519PublicKey', () => {
  const key = anEd25519Key();

  it('reads the same 32 bytes from an SPKI PEM, base64 of the raw key and base64 of the SPKI DER', () => {
    expect(key.raw).toHaveLength(32);
    expect(ed25519PublicKey(key.pem)).toEqual(key.raw);
    expect(ed25519PublicKey(`\n  ${key.pem}\n`)).toEqual(key.raw);
    expect(ed25519PublicKey(key.raw.toString('base64'))).toEqual(key.raw);
    expect(ed25519PublicKey(key.spkiDer.toString('base64'))).toEqual(key.raw);
  });

  it('refuses an RSA or X25519 public key, garbage, and a key of 31 or 33 bytes', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'pem', type: 'spki' }).toString();

    expect(ed25519PublicKey(rsa)).toBeNull();
    expect(ed25519PublicKey('not a key')).toBeNull();
    expect(ed25519PublicKey('')).toBeNull();
    expect(ed25519PublicKey('-----BEGIN PUBLIC KEY-----\nZ2FyYmFnZQ==\n-----END PUBLIC KEY-----\n')).toBeNull();
    expect(ed25519PublicKey(key.raw.subarray(0, 31).toString('base64'))).toBeNull();
    expect(ed25519PublicKey(Buffer.concat([key.raw, Buffer.from([0])]).toString('base64'))).toBeNull();
    // An X25519 key has 32 bytes too: its SPKI, as PEM or as base64, is not taken for an Ed25519 key.
    const x25519 = generateKeyPairSync('x25519').publicKey;
    expect(ed25519PublicKey(x25519.export({ format: 'pem', type: 'spki' }).toString())).toBeNull();
    expect(ed25519PublicKey(x25519.export({ format: 'der', type: 'spki' }).toString('base64'))).toBeNull();
  });

  it('refuses a private key, although a public key could be derived from it: it must never be sent to the service', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    expect(ed25519PublicKey(privateKey.export({ format: 'pem', type: 'pkcs8' }).toString())).toBeNull();
    expect(ed25519PublicKey(privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'))).toBeNull();
  });
});

describe('keyFingerprint and publicKeyPem', () => {
  it('names a key "ed25519:" and 16 hex digits, the same every time, another for another key', () => {
    const one = anEd25519Key().raw;
    const other = anEd25519Key().raw;

    expect(keyFingerprint(one)).toMatch(/^ed25519:[0-9a-f]{16}$/);
    expect(keyFingerprint(Buffer.from(one))).toBe(keyFingerprint(one));
    expect(keyFingerprint(other)).not.toBe(keyFingerprint(one));
    // SHA-256 of 32 zero bytes: 66687aadf862bd77…
    expect(keyFingerprint(Buffer.alloc(32))).toBe('ed25519:66687aadf862bd77');
  });

  it('writes the SPKI PEM that Node writes for the key, which reads back to the same bytes', () => {
    const key = anEd25519Key();

    expect(publicKeyPem(key.raw)).toBe(key.pem);
    expect(ed25519PublicKey(publicKeyPem(key.raw))).toEqual(key.raw);
  });
});

describe('signatureHolds', () => {
  const key = anEd25519Key();
  const manifest = firmwareManifest({ version: '0.3.1', hardwareId: 'esp32-s3', sha256: SHA256, size: 1048576, minFromVersion: null });
  const signature = sign(null, Buffer.from(manifest, 'utf8'), key.privateKey);

  it('holds for the key that signed the manifest', () => {
    expect(signature).toHaveLength(64);
    expect(signatureHolds(key.raw, manifest, signature)).toBe(true);
  });

  it('does not hold for another key, an altered manifest, or a signature cut or altered', () => {
    const flipped = Buffer.from(signature);
    flipped[10] ^= 0x01;

    expect(signatureHolds(anEd25519Key().raw, manifest, signature)).toBe(false);
    expect(signatureHolds(key.raw, manifest.replace('size=1048576', 'size=1048577'), signature)).toBe(false);
    expect(signatureHolds(key.raw, manifest.replace('hardware=esp32-s3', 'hardware='), signature)).toBe(false);
    expect(signatureHolds(key.raw, manifest, signature.subarray(0, 63))).toBe(false);
    expect(signatureHolds(key.raw, manifest, Buffer.concat([signature, Buffer.from([0])]))).toBe(false);
    expect(signatureHolds(key.raw, manifest, flipped)).toBe(false);
    expect(signatureHolds(key.raw.subarray(0, 31), manifest, signature)).toBe(false);
  });
});
