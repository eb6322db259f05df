import { spawn } from 'node:child_process';
import { createHash, createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519PublicKey, firmwareManifest, keyFingerprint, signatureHolds } from '../../src/modules/ota/domain/firmware-manifest.js';
import { root } from '../support/service-process.js';

/**
 * scripts/firmware-sign.ts as the firmware team runs it: Node 24 runs the TypeScript file itself
 * (type stripping), in a directory of their own, and the JSON it prints is what the service verifies.
 */
const node = join(root, 'node_modules', '.bin', 'node');
const script = join(root, 'scripts', 'firmware-sign.ts');
const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' };

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string): Promise<Finished> {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}

let dir: string;
const firmwareSign = (...args: string[]) => run(node, [script, ...args], dir);
/** The last line of stdout, as JSON (npm run prints its own lines before it). */
const lastJson = (stdout: string) => JSON.parse(stdout.trimEnd().split('\n').at(-1)!) as Record<string, unknown>;

interface GeneratedKey {
  keyId: string;
  publicKey: string;
  privateKeyFile: string;
  publicKeyFile: string;
}

let generated: Finished;
let key: GeneratedKey;
let image: Buffer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'firmware-sign-'));
  image = randomBytes(100_000);
  writeFileSync(join(dir, 'fw.bin'), image);
  generated = await firmwareSign('--generate-key', '--out', 'release');
  key = lastJson(generated.stdout) as unknown as GeneratedKey;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('--generate-key', () => {
  it('writes a PKCS#8 Ed25519 private key (mode 0600) and its SPKI public key, and prints the body of POST /admin/firmware/signing-keys', () => {
    expect(generated.code).toBe(0);
    expect(generated.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(Object.keys(key).sort()).toEqual(['keyId', 'privateKeyFile', 'publicKey', 'publicKeyFile']);
    expect(key.privateKeyFile).toBe(join(dir, 'release.pem'));
    expect(key.publicKeyFile).toBe(join(dir, 'release.pub.pem'));

    expect(statSync(key.privateKeyFile).mode & 0o777).toBe(0o600);
    const privatePem = readFileSync(key.privateKeyFile, 'utf8');
    expect(privatePem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(createPrivateKey(privatePem).asymmetricKeyType).toBe('ed25519');
    expect(readFileSync(key.publicKeyFile, 'utf8')).toBe(key.publicKey);
    expect(key.publicKey).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);

    const raw = ed25519PublicKey(key.publicKey);
    expect(raw).not.toBeNull();
    expect(key.keyId).toBe(keyFingerprint(raw!));
    expect(key.keyId).toMatch(/^ed25519:[0-9a-f]{16}$/);
    expect(generated.stdout + generated.stderr).not.toContain('PRIVATE KEY');
  });

  it('refuses to overwrite either file of an existing key: exit 2, a message on stderr, nothing on stdout', async () => {
    writeFileSync(join(dir, 'taken.pem'), 'keep me');
    const privateTaken = await firmwareSign('--generate-key', '--out', 'taken');
    expect(privateTaken).toEqual({ code: 2, stdout: '', stderr: expect.stringContaining('taken.pem exists') });
    expect(readFileSync(join(dir, 'taken.pem'), 'utf8')).toBe('keep me');
    expect(existsSync(join(dir, 'taken.pub.pem'))).toBe(false);

    writeFileSync(join(dir, 'half.pub.pem'), 'keep me too');
    const publicTaken = await firmwareSign('--generate-key', '--out', 'half');
    expect(publicTaken).toEqual({ code: 2, stdout: '', stderr: expect.stringContaining('half.pub.pem exists') });
    expect(existsSync(join(dir, 'half.pem'))).toBe(false);
    expect(readFileSync(join(dir, 'half.pub.pem'), 'utf8')).toBe('keep me too');
  });
});

describe('signing', () => {
  it('prints, as its only stdout line, the signed fields of POST /admin/firmware; the signature holds over their manifest', async () => {
    const signed = await firmwareSign('--key', 'release.pem', '--image', 'fw.bin', '--version', '0.3.1', '--hardware', 'esp32-s3', '--min-version', '0.2.0');

    expect(signed.code).toBe(0);
    expect(signed.stdout.endsWith('\n')).toBe(true);
    expect(signed.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(signed.stdout + signed.stderr).not.toContain('PRIVATE KEY');
    const output = lastJson(signed.stdout);
    expect(Object.keys(output)).toEqual(['version', 'hardwareId', 'sha256', 'size', 'minFromVersion', 'signingKeyId', 'signature']);
    expect(output).toMatchObject({
      version: '0.3.1',
      hardwareId: 'esp32-s3',
      sha256: createHash('sha256').update(image).digest('hex'),
      size: 100_000,
      minFromVersion: '0.2.0',
      signingKeyId: key.keyId,
    });
    const signature = Buffer.from(output.signature as string, 'base64');
    expect(signature).toHaveLength(64);
    expect(signature.toString('base64')).toBe(output.signature);

    const publicKey = ed25519PublicKey(key.publicKey)!;
    const fields = { version: '0.3.1', hardwareId: 'esp32-s3', sha256: output.sha256 as string, size: 100_000, minFromVersion: '0.2.0' };
    expect(signatureHolds(publicKey, firmwareManifest(fields), signature)).toBe(true);
    const sha256 = fields.sha256;
    const flipped = `${sha256.slice(0, 20)}${sha256[20] === '0' ? '1' : '0'}${sha256.slice(21)}`;
    expect(signatureHolds(publicKey, firmwareManifest({ ...fields, sha256: flipped }), signature)).toBe(false);
    expect(signatureHolds(publicKey, firmwareManifest({ ...fields, hardwareId: null }), signature)).toBe(false);
  });

  it('leaves out hardwareId and minFromVersion when not given, signs them as empty, and takes --key-id', async () => {
    const signed = await firmwareSign('--key', 'release.pem', '--image', 'fw.bin', '--version', '1.0', '--key-id', 'release-2026');

    expect(signed.code).toBe(0);
    const output = lastJson(signed.stdout);
    expect(Object.keys(output)).toEqual(['version', 'sha256', 'size', 'signingKeyId', 'signature']);
    expect(output.signingKeyId).toBe('release-2026');
    const manifest = firmwareManifest({ version: '1.0', hardwareId: null, sha256: output.sha256 as string, size: 100_000, minFromVersion: null });
    expect(signatureHolds(ed25519PublicKey(key.publicKey)!, manifest, Buffer.from(output.signature as string, 'base64'))).toBe(true);
  });

  it('npm run firmware:sign takes paths from the directory it was run in; its JSON is the last line of stdout', async () => {
    const signed = await run('npm', ['--prefix', root, 'run', 'firmware:sign', '--', '--key', 'release.pem', '--image', 'fw.bin', '--version', '0.3.2'], dir);

    expect(signed.code).toBe(0);
    expect(lastJson(signed.stdout)).toMatchObject({ version: '0.3.2', size: 100_000, signingKeyId: key.keyId });
  });

  it('--help prints the usage', async () => {
    const help = await firmwareSign('--help');

    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--generate-key');
    expect(help.stdout).toContain('--min-version');
  });
});

describe('refusals: exit 2, a message on stderr, nothing on stdout', () => {
  const sign = ['--image', 'fw.bin', '--version', '0.3.1'];

  beforeAll(() => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    writeFileSync(join(dir, 'rsa.pem'), rsa.export({ format: 'pem', type: 'pkcs8' }));
  });

  it.each([
    ['an RSA key', ['--key', 'rsa.pem', ...sign], /rsa, not Ed25519/],
    ['a missing key file', ['--key', 'absent.pem', ...sign], /absent\.pem: cannot read it/],
    ['the public key given as --key', ['--key', 'release.pub.pem', ...sign], /not an unencrypted private key/],
    ['a bad version', ['--key', 'release.pem', '--image', 'fw.bin', '--version', '0.3.x'], /--version "0\.3\.x"/],
    ['a one-part version', ['--key', 'release.pem', '--image', 'fw.bin', '--version', '3'], /--version "3"/],
    ['a bad minimum version', ['--key', 'release.pem', ...sign, '--min-version', '0.2-rc1'], /--min-version "0\.2-rc1"/],
    ['a hardware id over 128 characters', ['--key', 'release.pem', ...sign, '--hardware', 'x'.repeat(129)], /--hardware: must be 1-128 characters/],
    ['a line break in the hardware id', ['--key', 'release.pem', ...sign, '--hardware', 'esp32\nsize=1'], /--hardware: must not contain control characters/],
    ['a key id with a space', ['--key', 'release.pem', ...sign, '--key-id', 'release 2026'], /--key-id/],
    ['a missing image', ['--key', 'release.pem', '--image', 'absent.bin', '--version', '0.3.1'], /absent\.bin: cannot read it/],
    ['no --key', sign, /missing --key/],
    ['an unknown option', ['--key', 'release.pem', ...sign, '--force'], /--force/],
    ['--generate-key without --out', ['--generate-key'], /--out/],
    ['--generate-key with signing options', ['--generate-key', '--out', 'other', '--key', 'release.pem'], /--generate-key takes only --out/],
  ])('%s', async (_case, args, message) => {
    const refused = await firmwareSign(...args);

    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(message);
    expect(refused.stderr).not.toContain('PRIVATE KEY');
    expect(refused.code).toBe(2);
  });
});
