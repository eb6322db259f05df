/**
 * `npm run firmware:sign`: the firmware team's signing tool. Signs a firmware image for
 * POST /api/v1/admin/firmware with an Ed25519 key, or makes a new key pair whose public half goes to
 * POST /api/v1/admin/firmware/signing-keys. The private key stays on the machine that signs: the
 * service only ever sees the public key and the signatures.
 *
 *   npm run firmware:sign -- --generate-key --out keys/release-2026
 *   npm run firmware:sign -- --key keys/release-2026.pem --image build/fw.bin --version 0.3.1 --hardware esp32-s3
 *
 * The last line of stdout is one JSON object; notes go to stderr. Exit code 2: bad arguments or files.
 * Runs with Node 24's type stripping (erasable TypeScript only) and imports the service's own
 * manifest module, so what it signs is byte for byte what the service and the gateways verify.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { closeSync, createReadStream, existsSync, fchmodSync, openSync, readFileSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ed25519PublicKey, firmwareManifest, keyFingerprint, signatureHolds } from '../src/modules/ota/domain/firmware-manifest.ts';

const HELP = `Usage:
  npm run firmware:sign -- --key <private.pem> --image <file> --version <x.y.z> [--hardware <id>] [--min-version <x.y.z>] [--key-id <name>]
  npm run firmware:sign -- --generate-key --out <prefix>

Signing:
  --key <file>            Ed25519 private key, PKCS#8 PEM (what "openssl genpkey -algorithm ed25519" or --generate-key writes)
  --image <file>          the firmware image; its SHA-256 and size are computed here
  --version <x.y.z>       the release's version: 2-4 dot-separated numbers
  --hardware <id>         only for this hardware (1-128 characters); absent: for every hardware
  --min-version <x.y.z>   only devices running at least this version may install it; absent: any
  --key-id <name>         the key's id at the service (1-64 characters of A-Z a-z 0-9 . _ : -);
                          default: the key's fingerprint, ed25519:<16 hex digits>
  Prints the fields of POST /api/v1/admin/firmware that the signature covers, as one JSON line:
  {"version","hardwareId"?,"sha256","size","minFromVersion"?,"signingKeyId","signature"}.
  Add url (and channel, releaseNotes, rolloutPercent, ...) and publish.

Key generation:
  --generate-key          make a new Ed25519 key pair
  --out <prefix>          writes <prefix>.pem (private, mode 0600) and <prefix>.pub.pem (public); never overwrites
  Prints {"keyId","publicKey","privateKeyFile","publicKeyFile"}: keyId and publicKey are the body of
  POST /api/v1/admin/firmware/signing-keys.

Relative paths are taken from the directory npm was run in. The private key is never printed and never
goes to the service. Exit code 2: bad arguments, an unreadable file, or a key that is not Ed25519.`;

const VERSION = /^\d{1,9}(\.\d{1,9}){1,3}$/;
/** What the service takes as a signing key's id (its signingKeyId). */
const KEY_ID = /^[A-Za-z0-9._:-]{1,64}$/;
/** The largest image POST /api/v1/admin/firmware takes (its `size`). */
const MAX_IMAGE_BYTES = 2_147_483_647;

/** A mistake the user can fix: a message on stderr and exit code 2. */
class UsageError extends Error {}

/** npm runs a script in the package's directory; the user meant paths from where they typed the command. */
const baseDir = process.env.npm_lifecycle_event === 'firmware:sign' && process.env.INIT_CWD ? process.env.INIT_CWD : process.cwd();
const pathOf = (file: string) => resolve(baseDir, file);

const note = (line: string) => process.stderr.write(`${line}\n`);
const reason = (error: unknown) => (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));

interface Signed {
  version: string;
  hardwareId?: string;
  sha256: string;
  size: number;
  minFromVersion?: string;
  signingKeyId: string;
  signature: string;
}

interface GeneratedKey {
  keyId: string;
  publicKey: string;
  privateKeyFile: string;
  publicKeyFile: string;
}

function readPrivateKey(file: string): KeyObject {
  let pem: Buffer;
  try {
    pem = readFileSync(pathOf(file));
  } catch (error) {
    throw new UsageError(`--key ${file}: cannot read it (${reason(error)})`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new UsageError(`--key ${file}: not an unencrypted private key in PEM (PKCS#8, as "openssl genpkey -algorithm ed25519" writes it)`);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new UsageError(`--key ${file}: a key of type ${key.asymmetricKeyType ?? 'unknown'}, not Ed25519; firmware is signed with Ed25519 (npm run firmware:sign -- --generate-key, or openssl genpkey -algorithm ed25519)`);
  }
  return key;
}

function rawPublicKey(privateKey: KeyObject): Buffer {
  const raw = ed25519PublicKey(createPublicKey(privateKey).export({ format: 'pem', type: 'spki' }).toString());
  if (raw === null) throw new Error('the public key derived from the private key is not an Ed25519 key');
  return raw;
}

/** SHA-256 (lowercase hex) and size of the image, read as a stream: images may be larger than memory allows. */
async function digest(file: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of createReadStream(pathOf(file))) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
  } catch (error) {
    throw new UsageError(`--image ${file}: cannot read it (${reason(error)})`);
  }
  if (size === 0) throw new UsageError(`--image ${file}: the file is empty`);
  if (size > MAX_IMAGE_BYTES) throw new UsageError(`--image ${file}: ${size} bytes, more than the service takes (${MAX_IMAGE_BYTES})`);
  return { sha256: hash.digest('hex'), size };
}

function checkVersion(option: string, value: string): string {
  if (!VERSION.test(value)) throw new UsageError(`--${option} ${JSON.stringify(value)}: must be 2-4 dot-separated numbers of at most 9 digits, such as 0.3.1`);
  return value;
}

function checkHardware(value: string): string {
  if (value.length < 1 || value.length > 128) throw new UsageError('--hardware: must be 1-128 characters');
  // A line break would end the manifest's hardware line early and make the manifest ambiguous.
  if (/\p{Cc}/u.test(value)) throw new UsageError('--hardware: must not contain control characters');
  return value;
}

async function signImage(values: Options): Promise<Signed> {
  const missing = (['key', 'image', 'version'] as const).filter((name) => values[name] === undefined);
  if (missing.length > 0) throw new UsageError(`missing ${missing.map((name) => `--${name}`).join(', ')}`);
  const version = checkVersion('version', values.version!);
  const hardwareId = values.hardware === undefined ? undefined : checkHardware(values.hardware);
  const minFromVersion = values['min-version'] === undefined ? undefined : checkVersion('min-version', values['min-version']);
  const keyIdOption = values['key-id'];
  if (keyIdOption !== undefined && !KEY_ID.test(keyIdOption)) throw new UsageError('--key-id: must be 1-64 characters of A-Z, a-z, 0-9, . _ : -');

  const privateKey = readPrivateKey(values.key!);
  const publicKey = rawPublicKey(privateKey);
  const { sha256, size } = await digest(values.image!);
  const manifest = firmwareManifest({ version, hardwareId: hardwareId ?? null, sha256, size, minFromVersion: minFromVersion ?? null });
  const signature = sign(null, Buffer.from(manifest, 'utf8'), privateKey);
  if (!signatureHolds(publicKey, manifest, signature)) throw new Error('the signature just made does not verify');

  const fingerprint = keyFingerprint(publicKey);
  const signingKeyId = keyIdOption ?? fingerprint;
  note(`Signed ${values.image} (${size} bytes, sha256 ${sha256}) as version ${version} for ${hardwareId ?? 'every hardware'} with key ${signingKeyId}${signingKeyId === fingerprint ? '' : ` (${fingerprint})`}.`);
  note('The manifest signed:');
  note(manifest.replace(/^/gm, '  ').trimEnd());
  note('Add "url" (and channel, releaseNotes, ...) to the JSON below and POST it to /api/v1/admin/firmware.');
  return {
    version,
    ...(hardwareId === undefined ? {} : { hardwareId }),
    sha256,
    size,
    ...(minFromVersion === undefined ? {} : { minFromVersion }),
    signingKeyId,
    signature: signature.toString('base64'),
  };
}

/** Creates the file with `mode`, or refuses when it exists (O_EXCL: also against a file made meanwhile). */
function writeNewFile(file: string, text: string, mode: number): void {
  let fd: number;
  try {
    fd = openSync(file, 'wx', mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(code === 'EEXIST' ? `${file} exists; refusing to overwrite it` : `cannot create ${file} (${reason(error)})`);
  }
  try {
    // The umask may only take bits away; this makes the mode exactly what was asked.
    fchmodSync(fd, mode);
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

function generateKey(values: Options): GeneratedKey {
  if (values.out === undefined || values.out === '') throw new UsageError('--generate-key needs --out <prefix>');
  const privateKeyFile = pathOf(`${values.out}.pem`);
  const publicKeyFile = pathOf(`${values.out}.pub.pem`);
  for (const file of [privateKeyFile, publicKeyFile]) {
    if (existsSync(file)) throw new UsageError(`${file} exists; refusing to overwrite it`);
  }
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const publicPem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
  writeNewFile(privateKeyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), 0o600);
  writeNewFile(publicKeyFile, publicPem, 0o644);
  const keyId = keyFingerprint(rawPublicKey(privateKey));
  note(`Wrote the private key to ${privateKeyFile} (mode 0600): keep it offline, never give it to the service.`);
  note(`Wrote the public key to ${publicKeyFile}. Register it: POST /api/v1/admin/firmware/signing-keys with {keyId, publicKey} below.`);
  return { keyId, publicKey: publicPem, privateKeyFile, publicKeyFile };
}

type Options = Partial<Record<'key' | 'image' | 'version' | 'hardware' | 'min-version' | 'key-id' | 'out', string>> & { 'generate-key'?: boolean; help?: boolean };

function parseOptions(argv: string[]): Options {
  try {
    const { values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        key: { type: 'string' },
        image: { type: 'string' },
        version: { type: 'string' },
        hardware: { type: 'string' },
        'min-version': { type: 'string' },
        'key-id': { type: 'string' },
        'generate-key': { type: 'boolean' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    return values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

async function main(argv: string[]): Promise<void> {
  const values = parseOptions(argv);
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const signing = (['key', 'image', 'version', 'hardware', 'min-version', 'key-id'] as const).filter((name) => values[name] !== undefined);
  if (values['generate-key']) {
    if (signing.length > 0) throw new UsageError(`--generate-key takes only --out, not ${signing.map((name) => `--${name}`).join(', ')}`);
    process.stdout.write(`${JSON.stringify(generateKey(values))}\n`);
    return;
  }
  if (values.out !== undefined) throw new UsageError('--out is for --generate-key');
  process.stdout.write(`${JSON.stringify(await signImage(values))}\n`);
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`firmware:sign: ${error.message}\n\nRun with --help for the options.\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`firmware:sign failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
