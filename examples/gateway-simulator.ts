/**
 * Runs N simulated gateways against a Device Cloud Service, each living the life docs/gateway.md
 * describes: register (or log in with saved credentials), upload telemetry in batches, poll its
 * configuration and firmware with ETags, install an offered release (download, SHA-256 check, OTA
 * events; with --trust-key only a release signed by a trusted key, as "Signed firmware" says; an
 * image the service keeps from the service with the device token, resumed after a cut), run
 * the commands sent to it (short or long poll, repeats dropped by commandId), keep a ring buffer
 * of log lines and upload them as the configuration's logUpload says (or a collect-logs command
 * asks), report the reason of every boot and, with --crash-every, crash and report the panic, and
 * recover from 401, 413, 429 and 503 the way firmware should.
 *
 *   npm run simulate -- --url http://localhost:3000 --gateways 5 --interval 2 --batch 5 --duration 60
 *
 * Typed with the client generated from openapi.json (openapi-fetch), and run by Node 24 as it is
 * (type stripping: this file uses only erasable TypeScript). `--help` lists the options.
 */
import { createHash, createPublicKey, randomBytes, randomInt, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import createClient from 'openapi-fetch';
import type { Client } from 'openapi-fetch';
import type { components, paths } from '@device-cloud/client';

type Api = Client<paths>;
type Schemas = components['schemas'];
type DeviceConfig = Schemas['DeviceConfigResponse'];
type Offer = Schemas['FirmwareOfferResponse'];
type OtaEvent = Schemas['OtaEventRequest'];
type Registration = Schemas['RegisterDeviceRequest'];
type Command = Schemas['PendingCommandResponse'];
type CommandResult = Schemas['CommandResultRequest'];
type FinalStatus = Exclude<CommandResult['status'], 'accepted'>;
type LogLevel = Schemas['LogLineRequest']['level'];
type CrashReport = Schemas['CrashReportRequest'];
type Panic = Schemas['PanicRequest'];
type ResetReason = CrashReport['resetReason'];

/** What the service enforces (docs/gateway.md, "Limits"). */
const MAX_RECORDS_PER_UPLOAD = 500;
const MAX_UPLOAD_BYTES = 1024 * 1024;
const MAX_EVENTS_PER_REPORT = 100;
/** What this firmware chooses (docs/gateway.md, "Retries"). */
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_CAP_MS = 300_000;
/** Registration retries stay well inside the service's 600 s retry window. */
const REGISTRATION_BACKOFF_CAP_MS = 60_000;
const RETRY_AFTER_JITTER_MS = 1_000;
const REQUEST_TIMEOUT_MS = 15_000;
const MAX_BUFFERED_RECORDS = 5_000;
const CLOCK_STEP_THRESHOLD_MS = 5_000;
const PROGRESS_REPORT_EVERY_MS = 30_000;
const FLUSH_TIMEOUT_MS = 10_000;
/** A 500 may be caused by the batch itself: after this many tries it is dropped. */
const MAX_SERVER_ERROR_TRIES = 5;
/** What this firmware chooses (docs/gateway.md, "Commands"). */
const LONG_POLL_WAIT_SEC = 25;
const REMEMBERED_COMMANDS = 20;
/** Long polls start at least this far apart: one answered at once (an instance shutting down) must not make the loop spin. */
const MIN_LONG_POLL_SPACING_MS = 1_000;
/** What this firmware chooses (docs/gateway.md, "Logs"): the ring buffer's size and the lines of one upload. */
const MAX_LOG_LINES = 1_000;
const LOG_LINES_PER_UPLOAD = 200;
/** ESP-IDF's levels, quietest first: a gateway at `info` logs errors, warnings and info lines. */
const LOG_LEVELS = ['none', 'error', 'warn', 'info', 'debug', 'verbose'] as const;
type GatewayLogLevel = (typeof LOG_LEVELS)[number];
/** Messages are at most 512 bytes of UTF-8 (a longer one refuses the batch): 160 characters are at most 480. */
const MAX_MESSAGE_CHARS = 160;
/** The first line of a signed release's manifest (docs/gateway.md, "Signed firmware"); any other format is refused. */
const MANIFEST_FORMAT = 'dcs-firmware-manifest/1';
/** The manifest's lines after the first, in their order. */
const MANIFEST_KEYS = ['version', 'hardware', 'sha256', 'size', 'minVersion'] as const;
const VERSION_PATTERN = /^\d{1,9}(\.\d{1,9}){1,3}$/;
/** The reset reasons the service counts as crashes (docs/api.md, "Crash reports and reboot reasons"). */
const CRASH_REASONS: readonly ResetReason[] = ['panic', 'int_wdt', 'task_wdt', 'wdt', 'cpu_lockup'];
/** One firmware download request may take this long (its body included). */
const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;
/** What this firmware chooses (docs/gateway.md, "Images the service keeps"): cuts of a download from the service resumed by Range before it gives up. */
const DOWNLOAD_RESUMES = 4;
/** … and 503s (every download slot of the instance taken) waited out, each for its Retry-After, before it gives up. */
const DOWNLOAD_BUSY_WAITS = 30;

const HELP = `Usage: npm run simulate -- [options]      (or: npm exec -- node examples/gateway-simulator.ts [options])

  --url <url>               service base URL (default http://localhost:3000)
  --gateways <n>            simulated gateways (default 3)
  --interval <sec>          seconds between telemetry samples (default: the device config, telemetryIntervalSec)
  --batch <n>               records per upload (default: the device config, uploadBatchSize)
  --duration <sec>          stop after this long (default: run until Ctrl-C)
  --iterations <n>          stop after each gateway took this many samples
  --config-interval <sec>   seconds between config polls (default 30)
  --ota-interval <sec>      seconds between OTA checks (default: the device config, otaCheckIntervalSec)
  --ramp <sec>              spread the gateways' first boot over this long (default 2)
  --prefix <text>           deviceId prefix (default sim-<random>); deviceIds are <prefix>-0001, …
  --firmware <version>      firmware the gateways run at first boot (default 0.1.4; 0.1.4 and later send a claim code)
  --clock-skew <sec>        start every gateway's clock this far off (the Date header corrects it)
  --install-sec <sec>       how long a simulated install and reboot take (default 1; a reboot command: half)
  --long-poll               fetch commands with a long poll (waitSec=${LONG_POLL_WAIT_SEC}) on a loop of their own,
                            instead of a short poll at the config poll's cadence
  --crash-every <n>         each gateway panics after every n-th telemetry upload (a made-up backtrace, the same for
                            every gateway of a firmware version), restarts as after a reboot and reports the crash
  --trust-key <file>        the firmware team's Ed25519 public key (SPKI PEM), built into the gateways; repeat for
                            more keys. A gateway then installs only a release signed by one of them whose manifest
                            holds (docs/gateway.md, "Signed firmware") and refuses any other with verify_failed:
                            E_UNSIGNED, E_SIGNATURE, E_MANIFEST before downloading, E_SHA_MISMATCH after
  --state <file>            keep credentials here (mode 0600): an existing file is the fleet, which logs in instead of registering
  --admin-email <email>     with --admin-password (or SIMULATOR_ADMIN_PASSWORD): import the fleet into the
                            registration allowlist first (needed under REGISTRATION_MODE=allowlist)
  --admin-password <pw>
  --json                    print the summary as one JSON object
  --verbose                 one line per retry, refusal and OTA step
  --help

Firmware downloads from https URLs signed by a private CA: NODE_EXTRA_CA_CERTS=ca.pem npm run simulate -- …
An offer whose url is a path (an image the service keeps) is downloaded from --url with the gateway's device token,
resumed with Range and If-Range after a cut (${DOWNLOAD_RESUMES} times at most), and after a 503 once its Retry-After has passed;
no token is sent to any other host.
Ctrl-C stops sampling, uploads what is buffered (at most ${FLUSH_TIMEOUT_MS / 1000} s) and prints the summary; a second Ctrl-C quits at once.`;

export interface Options {
  url: string;
  gateways: number;
  intervalSec?: number;
  batch?: number;
  durationSec?: number;
  iterations?: number;
  configIntervalSec: number;
  otaIntervalSec?: number;
  rampSec: number;
  prefix: string;
  firmware: string;
  clockSkewSec: number;
  installSec: number;
  longPoll: boolean;
  crashEvery?: number;
  /** --trust-key: none, and a release's signature is not checked (its sha256 and size are). */
  trustedKeys: KeyObject[];
  stateFile?: string;
  adminEmail?: string;
  adminPassword?: string;
  json: boolean;
  verbose: boolean;
}

interface Credentials {
  deviceId: string;
  hardwareId: string;
  claimCode?: string;
  firmwareVersion: string;
  deviceSecret?: string;
  /** NVS: the boots so far, and a tag drawn when NVS was first written: a crashId is <tag>-<boot>, unique even after a factory reset. */
  boots?: number;
  nvsTag?: string;
}

/** One answer of the service, or none (status 0: network error or timeout). */
interface Answer<T> {
  status: number;
  data?: T;
  code?: string;
  detail?: string;
  retryAfterMs?: number;
  etag?: string | null;
}

type Sent<T> = Promise<{ data?: T; error?: unknown; response: Response }>;

interface SendOptions {
  timeoutMs?: number;
  untilStop?: boolean;
}

export function parseOptions(argv: string[]): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      url: { type: 'string' },
      gateways: { type: 'string' },
      interval: { type: 'string' },
      batch: { type: 'string' },
      duration: { type: 'string' },
      iterations: { type: 'string' },
      'config-interval': { type: 'string' },
      'ota-interval': { type: 'string' },
      ramp: { type: 'string' },
      prefix: { type: 'string' },
      firmware: { type: 'string' },
      'clock-skew': { type: 'string' },
      'install-sec': { type: 'string' },
      'long-poll': { type: 'boolean' },
      'crash-every': { type: 'string' },
      'trust-key': { type: 'string', multiple: true },
      state: { type: 'string' },
      'admin-email': { type: 'string' },
      'admin-password': { type: 'string' },
      json: { type: 'boolean' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) return 'help';
  const number = (name: string, raw: string | undefined, { min, integer = false }: { min: number; integer?: boolean }): number | undefined => {
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) throw new Error(`--${name} must be ${integer ? 'an integer' : 'a number'} ≥ ${min}`);
    return value;
  };
  const firmware = values.firmware ?? '0.1.4';
  if (!VERSION_PATTERN.test(firmware)) throw new Error('--firmware must be a dotted numeric version such as 0.1.4');
  const prefix = values.prefix ?? `sim-${randomBytes(2).toString('hex')}`;
  if (!/^[A-Za-z0-9._:-]{1,58}$/.test(prefix)) throw new Error('--prefix must be 1–58 characters of A–Z a–z 0–9 . _ : -');
  const batch = number('batch', values.batch, { min: 1, integer: true });
  if (batch !== undefined && batch > MAX_RECORDS_PER_UPLOAD) throw new Error(`--batch must be at most ${MAX_RECORDS_PER_UPLOAD} (the service's limit)`);
  return {
    url: (values.url ?? 'http://localhost:3000').replace(/\/+$/, ''),
    gateways: number('gateways', values.gateways, { min: 1, integer: true }) ?? 3,
    intervalSec: number('interval', values.interval, { min: 0.05 }),
    batch,
    durationSec: number('duration', values.duration, { min: 0 }),
    iterations: number('iterations', values.iterations, { min: 1, integer: true }),
    configIntervalSec: number('config-interval', values['config-interval'], { min: 0.1 }) ?? 30,
    otaIntervalSec: number('ota-interval', values['ota-interval'], { min: 0.1 }),
    rampSec: number('ramp', values.ramp, { min: 0 }) ?? 2,
    prefix,
    firmware,
    clockSkewSec: Number(values['clock-skew'] ?? 0) || 0,
    installSec: number('install-sec', values['install-sec'], { min: 0 }) ?? 1,
    longPoll: values['long-poll'] ?? false,
    crashEvery: number('crash-every', values['crash-every'], { min: 1, integer: true }),
    trustedKeys: (values['trust-key'] ?? []).map(trustedKey),
    stateFile: values.state,
    adminEmail: values['admin-email'],
    adminPassword: values['admin-password'] ?? process.env.SIMULATOR_ADMIN_PASSWORD,
    json: values.json ?? false,
    verbose: values.verbose ?? false,
  };
}

/** A --trust-key file: an Ed25519 public key as an SPKI PEM (what `openssl pkey -pubout` writes). */
function trustedKey(file: string): KeyObject {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`--trust-key ${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  // Only a public key: node would derive one from a private key too, which has no business on a gateway.
  if (!pem.trim().startsWith('-----BEGIN PUBLIC KEY-----')) throw new Error(`--trust-key ${file}: not a public key PEM (-----BEGIN PUBLIC KEY-----)`);
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw new Error(`--trust-key ${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`--trust-key ${file}: an Ed25519 key is needed, not ${key.asymmetricKeyType ?? 'this one'}`);
  return key;
}

/** The n-th retry (0-based) waits between half and all of min(cap, base × 2^n): "equal jitter". */
export function backoffMs(attempt: number, capMs = BACKOFF_CAP_MS): number {
  const ceiling = Math.min(capMs, BACKOFF_BASE_MS * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function retryAfterMsOf(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** No answer, a timeout, or the service saying "not now": the same request may be sent again. */
function isTransient(answer: Answer<unknown>): boolean {
  return answer.status === 0 || answer.status === 408 || answer.status === 429 || answer.status >= 500;
}

/** Numeric, part by part, missing parts 0: how the service orders firmware versions. */
function compareVersions(a: string, b: string): number {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return Math.sign((x[i] ?? 0) - (y[i] ?? 0));
  return 0;
}

/**
 * Where an offer's image is fetched from. A url that is a path names an image the service keeps
 * (docs/gateway.md, "Images the service keeps"): it is fetched from the service's host, the way
 * every API path is (appended to the base URL), with the device token. Any other url as it is, and
 * without the token: that never leaves for another host.
 */
function imageSource(url: string, serviceUrl: string): { url: string; hosted: boolean } {
  if (!url.startsWith('/')) return { url, hosted: false };
  const resolved = `${serviceUrl}${url}`;
  // Appended, a path cannot name another host ("//host/…" included); checked all the same, the token rides along.
  if (new URL(resolved).origin !== new URL(serviceUrl).origin) throw new Error(`${url} does not resolve to the service's host`);
  return { url: resolved, hosted: true };
}

/** The first byte of a 206's `Content-Range: bytes <first>-<last>/<size>`, or null. */
function rangeStartOf(header: string | null): number | null {
  const match = header ? /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header.trim()) : null;
  return match ? Number(match[1]) : null;
}

/** What a failed fetch says: undici's own message ("fetch failed", "terminated") hides the socket's in `cause`. */
function networkError(error: unknown): string {
  return (error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)).slice(0, 500);
}

/** An update that did not happen, reported as this OTA event with the firmware's errorCode. */
interface OtaFailure {
  type: 'download_failed' | 'verify_failed';
  errorCode: string;
  message: string;
}

/** What the downloaded image must be: the offer's sha256 and size, or (--trust-key) the signed manifest's. */
interface ExpectedImage {
  sha256: string;
  size: number;
  signed: boolean;
}

const refusal = (errorCode: string, message: string): OtaFailure => ({ type: 'verify_failed', errorCode, message: message.slice(0, 500) });

/** The manifest's values by key, or null when it is not six lines of dcs-firmware-manifest/1, each ended by "\n". */
function manifestValues(manifest: string): Record<(typeof MANIFEST_KEYS)[number], string> | null {
  if (!manifest.endsWith('\n')) return null;
  const [format, ...lines] = manifest.slice(0, -1).split('\n');
  if (format !== MANIFEST_FORMAT || lines.length !== MANIFEST_KEYS.length || !MANIFEST_KEYS.every((key, index) => lines[index].startsWith(`${key}=`))) return null;
  const [version, hardware, sha256, size, minVersion] = lines.map((line) => line.slice(line.indexOf('=') + 1));
  return { version, hardware, sha256, size, minVersion };
}

function signedBy(key: KeyObject, manifest: Buffer, signature: Buffer): boolean {
  try {
    return verify(null, manifest, key, signature);
  } catch {
    return false;
  }
}

/**
 * Steps 1–3 of docs/gateway.md, "Signed firmware", before anything is downloaded: a signature by one
 * of the trusted keys over the manifest's bytes, then the manifest against the offer and against what
 * the gateway is and runs. Answers what the image must be (step 4), or why the release is refused.
 */
function checkSignedOffer(offer: Offer, gateway: { hardwareId: string; runs: string }, trustedKeys: readonly KeyObject[]): ExpectedImage | OtaFailure {
  // Absent too: a service older than signed firmware sends no signature.
  if (!offer.signature) return refusal('E_UNSIGNED', `${offer.version} is not signed`);
  const signature = Buffer.from(offer.signature, 'base64');
  const manifest = offer.manifest ?? null;
  if (manifest === null || signature.length !== 64 || !trustedKeys.some((key) => signedBy(key, Buffer.from(manifest, 'utf8'), signature))) {
    return refusal('E_SIGNATURE', `the signature of ${offer.version}${offer.signingKeyId ? ` (key ${offer.signingKeyId})` : ''} does not verify with a trusted key`);
  }
  const values = manifestValues(manifest);
  if (!values) return refusal('E_MANIFEST', `the manifest is not six lines of ${MANIFEST_FORMAT}`);
  const { version, hardware, sha256, size, minVersion } = values;
  if (version !== offer.version) return refusal('E_MANIFEST', `the manifest is for version ${version}, the offer for ${offer.version}`);
  // An older release's signature stays valid: it must not downgrade the gateway, unless the offer is
  // a rollback an administrator ordered (then it must be older).
  if (!VERSION_PATTERN.test(version)) return refusal('E_MANIFEST', `the manifest's version ${version} is malformed`);
  const order = compareVersions(version, gateway.runs);
  if (offer.rollback === true ? order >= 0 : order <= 0) {
    return refusal('E_MANIFEST', `the manifest's version ${version} is not ${offer.rollback === true ? 'older' : 'newer'} than ${gateway.runs}, which runs`);
  }
  if (hardware !== '' && hardware !== gateway.hardwareId) return refusal('E_MANIFEST', `the manifest is for hardware ${hardware}, this is ${gateway.hardwareId}`);
  if (minVersion !== '' && (!VERSION_PATTERN.test(minVersion) || compareVersions(minVersion, gateway.runs) > 0)) {
    return refusal('E_MANIFEST', `the manifest installs from ${minVersion} or later, this runs ${gateway.runs}`);
  }
  if (!/^[0-9a-f]{64}$/.test(sha256) || !/^\d{1,15}$/.test(size)) return refusal('E_MANIFEST', "the manifest's sha256 or size is malformed");
  return { sha256, size: Number(size), signed: true };
}

/** A firmware version's bug: the same made-up panic on every gateway that runs it, so that their reports group. */
function panicOf(firmwareVersion: string): Panic {
  const digest = createHash('sha256').update(`panic ${firmwareVersion}`).digest();
  const backtrace = Array.from({ length: 8 }, (_, frame) => `0x400d${digest.readUInt16BE(frame * 2).toString(16).padStart(4, '0')}`);
  return { task: 'bms_poll', excCause: 'LoadProhibited', pc: backtrace[0], backtrace };
}

/** A message is at most 512 bytes of UTF-8, or the whole batch is refused: cut long ones. */
const messageOf = (text: string): string => (text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…` : text);

const gzipJson = (body: unknown): Buffer => gzipSync(JSON.stringify(body));

function claimCode(): string {
  const group = () => Array.from({ length: 4 }, () => String.fromCharCode(65 + randomInt(26))).join('');
  return `${group()}-${group()}-${group()}`;
}

class Notifier {
  private waiters: Array<() => void> = [];

  wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** Counters for the progress line and the summary. */
class Stats {
  readonly startedAt = Date.now();
  registered = 0;
  fromState = 0;
  logins = 0;
  refreshes = 0;
  sampled = 0;
  uploads = 0;
  accepted = 0;
  duplicates = 0;
  rejected: Record<string, number> = {};
  dropped = 0;
  restamped = 0;
  configPolls = 0;
  configUnchanged = 0;
  configApplied = 0;
  otaPolls = 0;
  otaUnchanged = 0;
  offers = 0;
  downloads = 0;
  installed = 0;
  updateFailures = 0;
  /** verify_failed, by errorCode: releases refused (counted in updateFailures too). */
  otaRefused: Record<string, number> = {};
  otaEvents = 0;
  commandPolls = 0;
  commandsUnchanged = 0;
  commandsReceived = 0;
  commandRepeats = 0;
  commandResults: Record<FinalStatus, number> = { succeeded: 0, failed: 0, rejected: 0 };
  commandsFinished = 0;
  reboots = 0;
  linesLogged = 0;
  linesOverwritten = 0;
  logUploads = 0;
  linesAccepted = 0;
  lineDuplicates = 0;
  linesRejected: Record<string, number> = {};
  linesRestamped = 0;
  linesDropped = 0;
  logQuotaRefusals = 0;
  crashes = 0;
  resetReports: Partial<Record<ResetReason, number>> = {};
  resetRepeats = 0;
  retries = 0;
  waitedMs = 0;
  clockSteps = 0;
  answers: Record<string, number> = {};

  count(answer: Answer<unknown>): void {
    const key = answer.status === 0 ? 'no answer' : answer.code ? `${answer.status} ${answer.code}` : String(answer.status);
    this.answers[key] = (this.answers[key] ?? 0) + 1;
  }
}

/** The run's stop: soft (Ctrl-C, duration, iterations: finish uploads) and hard (second Ctrl-C). */
class Run {
  stopping = false;
  flushDeadline = Infinity;
  readonly hard = new AbortController();
  private readonly soft = new AbortController();
  private readonly stopped = new Notifier();

  stop(): void {
    if (this.stopping) return;
    this.stopping = true;
    this.flushDeadline = Date.now() + FLUSH_TIMEOUT_MS;
    this.soft.abort();
    this.stopped.notify();
  }

  /** Aborted on a soft stop too: for a request that only waits (a long poll). */
  get stopSignal(): AbortSignal {
    return this.soft.signal;
  }

  /** Sleeps; wakes early on a hard stop, and on a soft one unless `throughStop`. True when it slept the whole time. */
  async sleep(ms: number, { throughStop = false } = {}): Promise<boolean> {
    if (this.hard.signal.aborted || (!throughStop && this.stopping)) return false;
    let timer: NodeJS.Timeout | undefined;
    const elapsed = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), ms)));
    const woken = [new Promise<boolean>((resolve) => this.hard.signal.addEventListener('abort', () => resolve(false), { once: true }))];
    if (!throughStop) woken.push(this.stopped.wait().then(() => false));
    const slept = await Promise.race([elapsed, ...woken]);
    clearTimeout(timer);
    return slept;
  }

  whenStopped(): Promise<void> {
    return this.stopping ? Promise.resolve() : this.stopped.wait();
  }
}

interface Sample {
  /** performance.now() when measured: the record's time can be recomputed if the clock was wrong. */
  mono: number;
  ts: string;
  metrics: Record<string, number>;
  restamped: boolean;
}

/** A line of the log ring buffer; `sent` once the service stored it (or refused it for good). */
interface LogLine {
  mono: number;
  ts: string;
  level: LogLevel;
  tag: string;
  message: string;
  sent: boolean;
  restamped: boolean;
}

/** What a log upload did: the lines the service has now, and why it stopped early (the quota, the run's end). */
interface LogUpload {
  sent: number;
  refused?: string;
}

type GatewayState = 'booting' | 'registering' | 'online' | 'updating' | 'rebooting' | 'failed' | 'stopped';

class Gateway {
  state: GatewayState = 'booting';
  failure: string | null = null;
  cameOnline = false;
  sampled = 0;
  accepted = 0;
  private tokens: { access: string; refresh: string; expiresAt: number; lifetimeMs: number } | null = null;
  private reauthenticating: Promise<boolean> | null = null;
  private clockOffsetMs: number;
  private config: DeviceConfig | null = null;
  private configEtag: string | null = null;
  private otaEtag: string | null = null;
  /** Each offered version is tried once per run; firmware would retry a failed one at a later OTA check. */
  private readonly attemptedVersions = new Set<string>();
  private commandsEtag: string | null = null;
  /** The last commands run, oldest first, with their final status (null: running): in NVS on a gateway, so it survives a reboot. */
  private readonly commandsRun = new Map<string, FinalStatus | null>();
  /** set-log-level's, until the next restart; then the configuration's logLevel holds again. */
  private logLevelSet: GatewayLogLevel | null = null;
  /** The log ring buffer, oldest first (RAM, or flash to keep it across a restart: here it is kept). */
  private readonly logLines: LogLine[] = [];
  /** Log uploads go one at a time: the upload loop's and a collect-logs command's. */
  private logsSending: Promise<unknown> = Promise.resolve();
  /** 429 LOG_QUOTA_EXCEEDED: no log upload before this (performance.now()), Retry-After runs to midnight UTC. */
  private logQuotaUntil = 0;
  /** What the firmware keeps across a reset (RTC noinit memory, the core dump): reported once, after the login. */
  private resetReport: CrashReport | null = null;
  private telemetryUploads = 0;
  crashes = 0;
  private readonly buffer: Sample[] = [];
  private readonly buffered = new Notifier();
  /** upload-now: the last sample buffered when it came, and who waits for it to leave the buffer. */
  private flushes: Array<{ last: Sample; records: number; done: (records: number | null) => void }> = [];
  private uploadsEnded = false;
  private samplingDone = false;
  private bootedAt = performance.now();
  private soc = 40 + Math.random() * 55;
  readonly credentials: Credentials;
  private readonly fleet: Fleet;

  constructor(fleet: Fleet, credentials: Credentials) {
    this.fleet = fleet;
    this.credentials = credentials;
    this.clockOffsetMs = fleet.options.clockSkewSec * 1000;
  }

  get deviceId(): string {
    return this.credentials.deviceId;
  }

  get firmwareVersion(): string {
    return this.credentials.firmwareVersion;
  }

  get logLevel(): GatewayLogLevel {
    return this.logLevelSet ?? this.config?.logLevel ?? 'warn';
  }

  private get api(): Api {
    return this.fleet.api;
  }

  private get run(): Run {
    return this.fleet.run;
  }

  private get stats(): Stats {
    return this.fleet.stats;
  }

  /** The gateway's wall clock: the host's, off by --clock-skew until the Date header corrects it. */
  private now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  private log(message: string): void {
    this.fleet.log(`${this.deviceId}: ${message}`);
  }

  async live(): Promise<void> {
    try {
      if (!(await this.run.sleep(Math.random() * this.fleet.options.rampSec * 1000))) return;
      // Powered on: nothing of the boot before survived.
      this.newBoot('poweron');
      if (!(await this.boot())) return;
      this.state = 'online';
      this.cameOnline = true;
      await Promise.all([this.reportReset(), this.sampleLoop(), this.uploadLoop(), this.configLoop(), this.otaLoop(), this.commandLoop()]);
    } finally {
      this.doneSampling();
      if (this.state !== 'failed') this.state = 'stopped';
    }
  }

  private doneSampling(): void {
    if (this.samplingDone) return;
    this.samplingDone = true;
    this.buffered.notify();
    this.fleet.sampledAll();
  }

  private fail(reason: string): false {
    if (this.state !== 'failed') {
      this.state = 'failed';
      this.failure = reason;
      this.log(`gives up: ${reason}`);
    }
    return false;
  }

  // ---- one request ----

  /** `untilStop`: a request that only waits (a long poll) is given up when the run stops, and that is not counted as a failure. */
  private async send<T>(send: (signal: AbortSignal) => Sent<T>, { timeoutMs = REQUEST_TIMEOUT_MS, untilStop = false }: SendOptions = {}): Promise<Answer<T>> {
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), this.run.hard.signal, ...(untilStop ? [this.run.stopSignal] : [])]);
    let answer: Answer<T>;
    try {
      const { data, error, response } = await send(signal);
      this.correctClock(response.headers.get('date'));
      const problem = typeof error === 'object' && error !== null ? (error as { code?: string; detail?: string }) : undefined;
      answer = { status: response.status, data, code: problem?.code, detail: problem?.detail, retryAfterMs: retryAfterMsOf(response.headers.get('retry-after')), etag: response.headers.get('etag') };
    } catch (error) {
      if (untilStop && this.run.stopping) return { status: 0, detail: 'stopped' };
      answer = { status: 0, detail: error instanceof Error ? error.message : String(error) };
    }
    this.stats.count(answer);
    return answer;
  }

  /** The Date header has a resolution of one second: only a clock off by more than a few is stepped. */
  private correctClock(date: string | null): void {
    const server = date ? Date.parse(date) : NaN;
    if (Number.isNaN(server)) return;
    const error = server + 500 - this.now();
    if (Math.abs(error) <= CLOCK_STEP_THRESHOLD_MS) return;
    this.clockOffsetMs += error;
    this.stats.clockSteps++;
    this.log(`clock off by ${Math.round(error / 1000)} s, set from the Date header`);
    this.logLine('warn', 'time', `clock off by ${Math.round(error / 1000)} s, set from the Date header`);
  }

  /**
   * Sends until the answer is not transient. Waits Retry-After (plus up to 1 s of jitter) when the
   * service gives one, else the backoff. Stops retrying when the run stops (uploads: when the flush
   * time is up), and for a 500 after MAX_SERVER_ERROR_TRIES.
   */
  private async retrying<T>(
    what: string,
    attempt: () => Promise<Answer<T>>,
    { flush = false, capMs = BACKOFF_CAP_MS, final }: { flush?: boolean; capMs?: number; final?: (answer: Answer<T>) => boolean } = {},
  ): Promise<Answer<T>> {
    for (let tries = 0; ; tries++) {
      const answer = await attempt();
      // `final`: a refusal the caller handles itself (a 429 whose Retry-After runs to midnight).
      if (!isTransient(answer) || final?.(answer)) return answer;
      if (answer.status === 500 && tries + 1 >= MAX_SERVER_ERROR_TRIES) return answer;
      const waitMs = answer.retryAfterMs !== undefined ? answer.retryAfterMs + Math.random() * RETRY_AFTER_JITTER_MS : backoffMs(tries, capMs);
      if (this.run.stopping && (!flush || Date.now() + waitMs > this.run.flushDeadline)) return answer;
      const retry = `${what}: ${answer.status === 0 ? `no answer (${answer.detail})` : `${answer.status} ${answer.code ?? ''}`.trim()}, retrying in ${(waitMs / 1000).toFixed(1)} s`;
      this.log(retry);
      this.logLine('warn', 'http', retry);
      this.stats.retries++;
      this.stats.waitedMs += waitMs;
      if (!(await this.run.sleep(waitMs, { throughStop: flush }))) return answer;
    }
  }

  // ---- identity ----

  private async boot(): Promise<boolean> {
    if (this.credentials.deviceSecret) {
      this.stats.fromState++;
      if (!(await this.login())) return false;
    } else if (!(await this.register())) {
      return false;
    }
    if (this.config) await this.confirmApplied(this.config.version);
    return true;
  }

  /** The same body on every try, claim code included: a retry after a lost answer is then accepted. */
  private async register(): Promise<boolean> {
    this.state = 'registering';
    const { deviceId, hardwareId, claimCode, firmwareVersion } = this.credentials;
    const body: Registration = { deviceId, hardwareId, firmwareVersion, ...(claimCode ? { claimCode } : {}) };
    const answer = await this.retrying('register', () => this.send((signal) => this.api.POST('/api/v1/device/register', { body, signal })), { capMs: REGISTRATION_BACKOFF_CAP_MS });
    if (answer.status !== 201 || !answer.data) {
      if (answer.code === 'DEVICE_ALREADY_REGISTERED') return this.fail('deviceId already registered (409): another fleet uses it, or the retry window passed');
      if (answer.code === 'REGISTRATION_NOT_ALLOWED') return this.fail('not on the registration allowlist (403): pass --admin-email and --admin-password');
      return this.fail(`registration answered ${answer.status} ${answer.code ?? answer.detail ?? ''}`.trim());
    }
    // Persisted before the first authenticated call: after that a registration retry is refused.
    this.credentials.deviceSecret = answer.data.deviceSecret;
    this.fleet.saveState();
    this.setTokens(answer.data);
    this.config = answer.data.config;
    this.stats.registered++;
    this.logLine('info', 'auth', `registered as ${deviceId}`);
    return true;
  }

  private setTokens(pair: { accessToken: string; refreshToken: string; expiresIn: number }): void {
    this.tokens = { access: pair.accessToken, refresh: pair.refreshToken, expiresAt: performance.now() + pair.expiresIn * 1000, lifetimeMs: pair.expiresIn * 1000 };
  }

  private async login(): Promise<boolean> {
    const { deviceId, deviceSecret } = this.credentials;
    if (!deviceSecret) return this.fail('no device secret');
    const answer = await this.retrying('login', () => this.send((signal) => this.api.POST('/api/v1/device/login', { body: { deviceId, deviceSecret }, signal })));
    if (answer.status !== 200 || !answer.data) {
      // INVALID_CREDENTIALS: the secret was replaced (re-registration) or the device is gone; firmware
      // would register again and wait for its owner to open a re-registration window.
      return this.run.stopping && isTransient(answer) ? false : this.fail(`login answered ${answer.status} ${answer.code ?? answer.detail ?? ''}`.trim());
    }
    this.setTokens(answer.data);
    this.stats.logins++;
    this.logLine('info', 'auth', 'logged in');
    return true;
  }

  /** Refresh; a refused refresh token (INVALID_TOKEN: reuse, expiry, revocation) falls back to the secret. One at a time. */
  private reauthenticate(): Promise<boolean> {
    this.reauthenticating ??= (async () => {
      try {
        const refreshToken = this.tokens?.refresh;
        if (refreshToken) {
          // A repeat with the same token within the service's reuse grace (30 s) gets the same pair.
          const answer = await this.retrying('refresh', () => this.send((signal) => this.api.POST('/api/v1/device/token/refresh', { body: { refreshToken }, signal })));
          if (answer.status === 200 && answer.data) {
            this.setTokens(answer.data);
            this.stats.refreshes++;
            return true;
          }
          if (this.run.stopping && isTransient(answer)) return false;
          this.log(`refresh answered ${answer.status} ${answer.code ?? ''}, logging in with the secret`);
        }
        this.tokens = null;
        return await this.login();
      } finally {
        this.reauthenticating = null;
      }
    })();
    return this.reauthenticating;
  }

  private async accessToken(): Promise<string | null> {
    // Refreshed a minute before it expires (a tenth of its life for short-lived tokens), so no request carries a stale one.
    if (this.tokens && this.tokens.expiresAt - performance.now() > Math.min(60_000, this.tokens.lifetimeMs / 10)) return this.tokens.access;
    if (!(await this.reauthenticate())) return null;
    return this.tokens?.access ?? null;
  }

  /** An authenticated request: a 401 is answered by a refresh (or login) and one more try. */
  private async authed<T>(send: (headers: { authorization: string }, signal: AbortSignal) => Sent<T>, options: SendOptions = {}): Promise<Answer<T>> {
    let answer: Answer<T> = { status: 401, code: 'UNAUTHORIZED' };
    for (let tries = 0; tries < 2; tries++) {
      const token = await this.accessToken();
      if (!token) return answer;
      answer = await this.send((signal) => send({ authorization: `Bearer ${token}` }, signal), options);
      if (answer.status !== 401) return answer;
      if (this.tokens?.access === token) this.tokens.expiresAt = 0;
    }
    return answer;
  }

  // ---- telemetry ----

  private intervalMs(): number {
    return (this.fleet.options.intervalSec ?? this.config?.telemetryIntervalSec ?? 60) * 1000;
  }

  private batchSize(): number {
    return this.fleet.options.batch ?? this.config?.uploadBatchSize ?? 50;
  }

  private measure(): Record<string, number> {
    const current = Math.round((Math.random() * 8 - 5) * 100) / 100;
    this.soc = Math.min(100, Math.max(5, this.soc + current * 0.05));
    return {
      soc: Math.round(this.soc * 10) / 10,
      voltage: Math.round((12.4 + this.soc * 0.009 + Math.random() * 0.05) * 100) / 100,
      current,
      temperature: Math.round((22 + Math.random() * 6) * 10) / 10,
      rssi: -45 - randomInt(35),
      uptime: Math.round((performance.now() - this.bootedAt) / 1000),
      freeHeap: 150_000 + randomInt(50_000),
    };
  }

  private async sampleLoop(): Promise<void> {
    const { iterations } = this.fleet.options;
    while (!this.run.stopping && this.state !== 'failed') {
      if (this.state === 'online' || this.state === 'updating') {
        const mono = performance.now();
        const metrics = this.measure();
        this.buffer.push({ mono, ts: new Date(this.now()).toISOString(), metrics, restamped: false });
        this.sampled++;
        this.stats.sampled++;
        if (this.buffer.length > MAX_BUFFERED_RECORDS) {
          this.buffer.shift();
          this.stats.dropped++;
        }
        this.logSample(metrics);
        if (this.buffer.length >= this.batchSize()) this.buffered.notify();
        if (iterations !== undefined && this.sampled >= iterations) break;
      }
      if (!(await this.run.sleep(this.intervalMs()))) break;
    }
    this.doneSampling();
  }

  /** What firmware would log around a sample: a line at info, a warning now and then, a rare error, details at debug and verbose. */
  private logSample(metrics: Record<string, number>): void {
    if (Math.random() < 0.005) this.logLine('error', 'bms', 'cell voltages: CRC mismatch on UART1, kept the last reading');
    if (metrics.rssi < -75) this.logLine('warn', 'wifi', `weak signal: rssi ${metrics.rssi} dBm`);
    this.logLine('info', 'bms', `soc ${metrics.soc} %, ${metrics.voltage} V, ${metrics.current} A, ${metrics.temperature} °C`);
    this.logLine('debug', 'telemetry', `sample buffered, ${this.buffer.length} waiting`);
    this.logLine('verbose', 'telemetry', `free heap ${metrics.freeHeap} B, uptime ${metrics.uptime} s`);
  }

  private async uploadLoop(): Promise<void> {
    try {
      await this.uploadBatches();
    } finally {
      this.uploadsEnded = true;
      this.settleFlushes();
    }
  }

  private async uploadBatches(): Promise<void> {
    let maxRecords = MAX_RECORDS_PER_UPLOAD;
    for (;;) {
      this.settleFlushes();
      const flushing = this.samplingDone || this.run.stopping;
      if (this.state === 'failed' || this.run.hard.signal.aborted) return;
      if (this.buffer.length === 0 && flushing) {
        await this.uploadLogs();
        return;
      }
      // upload-now: what was buffered when it came goes out whatever the batch size.
      if (this.buffer.length < this.batchSize() && !flushing && this.flushes.length === 0) {
        await Promise.race([this.buffered.wait(), this.run.whenStopped()]);
        continue;
      }
      if (flushing && Date.now() > this.run.flushDeadline) return;
      // A backlog (after an outage or a 429) goes out in batches of up to 500 records, under 1 MiB.
      const batch = this.buffer.slice(0, maxRecords);
      const records = batch.map((sample) => ({ ts: sample.ts, batteryId: 'main', metrics: sample.metrics }));
      if (Buffer.byteLength(JSON.stringify({ records })) > MAX_UPLOAD_BYTES && batch.length > 1) {
        maxRecords = Math.ceil(batch.length / 2);
        continue;
      }
      const answer = await this.retrying('telemetry', () => this.authed((headers, signal) => this.api.POST('/api/v1/telemetry', { body: { records }, headers, signal })), { flush: true });
      this.stats.uploads++;
      if (answer.status === 200 && answer.data) {
        this.buffer.splice(0, batch.length);
        this.accepted += answer.data.accepted + answer.data.duplicates;
        this.stats.accepted += answer.data.accepted;
        this.stats.duplicates += answer.data.duplicates;
        for (const { index, code } of answer.data.rejected) this.rejected(batch[index], code);
        maxRecords = MAX_RECORDS_PER_UPLOAD;
        this.logLine('debug', 'telemetry', `uploaded ${batch.length} records`);
        // The log lines go out with the telemetry, at its cadence.
        await this.uploadLogs();
        this.telemetryUploads++;
        const { crashEvery } = this.fleet.options;
        if (crashEvery !== undefined && this.telemetryUploads % crashEvery === 0 && this.state === 'online' && !this.run.stopping) await this.crash();
      } else if (answer.code === 'PAYLOAD_TOO_LARGE' && batch.length > 1) {
        maxRecords = Math.ceil(batch.length / 2);
      } else if (isTransient(answer) || answer.status === 401) {
        // Out of time while stopping, or credentials lost: what is left stays unsent (counted in the summary).
        if (answer.status === 401 && !this.run.stopping) this.fail('telemetry refused a fresh token (401)');
        return;
      } else {
        // 400, 413 of one record, 415, or a 500 that kept coming back: sending it again cannot help.
        this.buffer.splice(0, batch.length);
        this.stats.dropped += batch.length;
        this.log(`dropped a batch of ${batch.length}: ${answer.status} ${answer.code ?? ''}`);
      }
    }
  }

  /** TS_IN_FUTURE: the record was not stored, so it can be sent again with the corrected clock without a duplicate. */
  private rejected(sample: Sample, code: string): void {
    this.stats.rejected[code] = (this.stats.rejected[code] ?? 0) + 1;
    if (code === 'TS_IN_FUTURE' && !sample.restamped) {
      this.buffer.push({ ...sample, ts: new Date(this.now() - (performance.now() - sample.mono)).toISOString(), restamped: true });
      this.stats.restamped++;
    } else {
      this.stats.dropped++;
    }
  }

  get unsent(): number {
    return this.buffer.length;
  }

  /** Resolves with the records buffered now once they left the buffer; null if uploads ended first (the run stopped, or failed). */
  private flushBuffer(): Promise<number | null> {
    const last = this.buffer.at(-1);
    if (!last) return Promise.resolve(0);
    if (this.uploadsEnded) return Promise.resolve(null);
    return new Promise((done) => {
      this.flushes.push({ last, records: this.buffer.length, done });
      this.buffered.notify();
    });
  }

  private settleFlushes(): void {
    const waiting = this.flushes;
    this.flushes = [];
    for (const flush of waiting) {
      if (!this.buffer.includes(flush.last)) flush.done(flush.records);
      else if (this.uploadsEnded) flush.done(null);
      else this.flushes.push(flush);
    }
  }

  // ---- logs ----

  /** ESP_LOGx: a line at the gateway's level or more severe goes into the ring buffer, over the oldest when it is full. */
  private logLine(level: LogLevel, tag: string, message: string): void {
    if (LOG_LEVELS.indexOf(level) > LOG_LEVELS.indexOf(this.logLevel)) return;
    this.logLines.push({ mono: performance.now(), ts: new Date(this.now()).toISOString(), level, tag, message: messageOf(message), sent: false, restamped: false });
    this.stats.linesLogged++;
    if (this.logLines.length > MAX_LOG_LINES) {
      this.logLines.shift();
      this.stats.linesOverwritten++;
    }
  }

  /** With the telemetry: the lines the configuration's logUpload asks for (errors, the default; all; none) that were not sent yet. */
  private uploadLogs(): Promise<LogUpload> {
    const upload = this.config?.logUpload ?? 'errors';
    if (upload === 'off') return Promise.resolve({ sent: 0 });
    return this.sendLogs((line) => upload === 'all' || line.level === 'error', { flush: true });
  }

  private sendLogs(select: (line: LogLine) => boolean, options: { flush: boolean }): Promise<LogUpload> {
    const sending = this.logsSending.then(() => this.sendLogLines(select, options));
    this.logsSending = sending.catch(() => undefined);
    return sending;
  }

  /**
   * The selected lines not sent yet, oldest first, gzip-compressed, up to LOG_LINES_PER_UPLOAD a
   * request. Safe to repeat (a line stored already comes back as a duplicate), so retried like
   * telemetry; but 429 LOG_QUOTA_EXCEEDED waits for its Retry-After (midnight UTC) without holding
   * the upload loop: the lines stay in the ring until then, and the oldest may be overwritten.
   */
  private async sendLogLines(select: (line: LogLine) => boolean, { flush }: { flush: boolean }): Promise<LogUpload> {
    let sent = 0;
    for (;;) {
      if (this.state === 'failed' || this.run.hard.signal.aborted) return { sent, refused: 'stopped' };
      const batch = this.logLines.filter((line) => !line.sent && select(line)).slice(0, LOG_LINES_PER_UPLOAD);
      if (batch.length === 0) return { sent };
      if (performance.now() < this.logQuotaUntil) return { sent, refused: 'the daily log quota is spent (429 LOG_QUOTA_EXCEEDED)' };
      const lines = batch.map(({ ts, level, tag, message }) => ({ ts, level, tag, message }));
      const answer = await this.retrying(
        'logs',
        () =>
          this.authed((headers, signal) =>
            this.api.POST('/api/v1/device/logs', { body: { lines }, bodySerializer: gzipJson, headers: { ...headers, 'content-encoding': 'gzip' }, signal }),
          ),
        { flush, final: (refusal) => refusal.code === 'LOG_QUOTA_EXCEEDED' },
      );
      this.stats.logUploads++;
      if (answer.status === 200 && answer.data) {
        for (const line of batch) line.sent = true;
        sent += answer.data.accepted + answer.data.duplicates;
        this.stats.linesAccepted += answer.data.accepted;
        this.stats.lineDuplicates += answer.data.duplicates;
        for (const { index, code } of answer.data.rejected) this.rejectedLine(batch[index], code);
      } else if (answer.code === 'LOG_QUOTA_EXCEEDED') {
        this.stats.logQuotaRefusals++;
        const waitMs = (answer.retryAfterMs ?? 3_600_000) + Math.random() * RETRY_AFTER_JITTER_MS;
        this.logQuotaUntil = performance.now() + waitMs;
        this.log(`log quota spent: no log upload for ${Math.round(waitMs / 1000)} s`);
        this.logLine('warn', 'logs', `daily log quota spent, next upload in ${Math.round(waitMs / 1000)} s`);
        return { sent, refused: 'the daily log quota is spent (429 LOG_QUOTA_EXCEEDED)' };
      } else if (isTransient(answer) || answer.status === 401) {
        // Out of time while stopping, or credentials lost: the lines stay in the ring.
        return { sent, refused: `${answer.status || 'no answer'} ${answer.code ?? ''}`.trim() };
      } else {
        // A 400 or 413: sending these lines again cannot help.
        for (const line of batch) line.sent = true;
        this.stats.linesDropped += batch.length;
        this.log(`dropped ${batch.length} log lines: ${answer.status} ${answer.code ?? ''}`);
        return { sent, refused: `${answer.status} ${answer.code ?? ''}`.trim() };
      }
    }
  }

  /** TS_IN_FUTURE: the line was not stored, so it is re-stamped from its monotonic time and sent once more. */
  private rejectedLine(line: LogLine, code: string): void {
    this.stats.linesRejected[code] = (this.stats.linesRejected[code] ?? 0) + 1;
    if (code === 'TS_IN_FUTURE' && !line.restamped) {
      line.ts = new Date(this.now() - (performance.now() - line.mono)).toISOString();
      line.restamped = true;
      line.sent = false;
      this.stats.linesRestamped++;
    } else {
      this.stats.linesDropped++;
    }
  }

  // ---- boots and crashes ----

  /**
   * A boot: counted in NVS, and its reset reason (with what the firmware kept in RTC memory at the
   * reset: when, the firmware, the uptime, a panic) kept to be reported once the gateway is logged
   * in. After a power-on nothing was kept.
   */
  private newBoot(resetReason: ResetReason, reset: Pick<CrashReport, 'ts' | 'firmwareVersion' | 'uptimeSec' | 'panic'> | null = null): void {
    const credentials = this.credentials;
    credentials.nvsTag ??= randomBytes(2).toString('hex');
    credentials.boots = (credentials.boots ?? 0) + 1;
    this.fleet.saveState();
    this.bootedAt = performance.now();
    this.resetReport = { crashId: `${credentials.nvsTag}-${credentials.boots}`, resetReason, ...(reset ?? { ts: new Date(this.now()).toISOString(), firmwareVersion: this.firmwareVersion, uptimeSec: 0 }) };
    // A crash is worth an error line: with logUpload `errors` it reaches the service too.
    const panic = reset?.panic;
    const crashed = CRASH_REASONS.includes(resetReason);
    this.logLine(
      crashed ? 'error' : 'info',
      'boot',
      `boot ${credentials.boots}: reset reason ${resetReason}, firmware ${this.firmwareVersion}${panic ? `, after a panic: ${panic.excCause} in ${panic.task} at ${panic.pc}` : ''}`,
    );
  }

  /** The boot's reset reason, once. Idempotent by crashId: a report whose answer was lost is answered 200 when sent again. */
  private async reportReset(): Promise<void> {
    const report = this.resetReport;
    if (!report) return;
    const answer = await this.retrying('crash report', () => this.authed((headers, signal) => this.api.POST('/api/v1/device/crashes', { body: report, headers, signal })));
    if (answer.status === 201 || answer.status === 200) {
      this.stats.resetReports[report.resetReason] = (this.stats.resetReports[report.resetReason] ?? 0) + 1;
      if (answer.status === 200) this.stats.resetRepeats++;
    } else if (isTransient(answer) || answer.status === 401) {
      // Out of time while stopping, or credentials lost: firmware keeps it and sends it after the next login.
      return;
    } else {
      this.log(`crash report ${report.crashId} dropped: ${answer.status} ${answer.code ?? ''}`);
    }
    if (this.resetReport === report) this.resetReport = null;
  }

  /** --crash-every: this firmware's bug strikes. The panic handler keeps what the report needs; the gateway restarts as after a reboot. */
  private async crash(): Promise<void> {
    this.crashes++;
    this.stats.crashes++;
    await this.restart('panic', { panic: panicOf(this.firmwareVersion) });
  }

  // ---- configuration ----

  private async configLoop(): Promise<void> {
    for (;;) {
      let waitMs = this.fleet.options.configIntervalSec * 1000;
      const answer = await this.authed((headers, signal) =>
        this.api.GET('/api/v1/device/config', { headers: { ...headers, ...(this.configEtag ? { 'if-none-match': this.configEtag } : {}) }, signal }),
      );
      this.stats.configPolls++;
      if (answer.status === 304) {
        this.stats.configUnchanged++;
      } else if (answer.status === 200 && answer.data) {
        this.configEtag = answer.etag ?? null;
        const changed = answer.data.version !== this.config?.version;
        this.config = answer.data;
        if (changed) await this.confirmApplied(answer.data.version);
      } else if (answer.retryAfterMs !== undefined) {
        waitMs = Math.max(waitMs, answer.retryAfterMs);
      }
      if (this.state === 'failed' || !(await this.run.sleep(waitMs))) return;
    }
  }

  private async confirmApplied(version: number): Promise<void> {
    const answer = await this.retrying('config applied', () => this.authed((headers, signal) => this.api.POST('/api/v1/device/config/applied', { body: { version }, headers, signal })));
    if (answer.status !== 204) return;
    this.stats.configApplied++;
    this.logLine('info', 'config', `applied configuration version ${version}`);
  }

  // ---- OTA ----

  private async otaLoop(): Promise<void> {
    for (;;) {
      let waitMs = (this.fleet.options.otaIntervalSec ?? this.config?.otaCheckIntervalSec ?? 3600) * 1000;
      const answer = await this.authed((headers, signal) =>
        this.api.GET('/api/v1/ota/latest', { headers: { ...headers, ...(this.otaEtag ? { 'if-none-match': this.otaEtag } : {}) }, signal }),
      );
      this.stats.otaPolls++;
      if (answer.status === 304) {
        this.stats.otaUnchanged++;
      } else if (answer.status === 200 && answer.data) {
        this.otaEtag = answer.etag ?? null;
        const offer = answer.data.firmware;
        if (offer && this.attemptedVersions.has(offer.version)) {
          this.log(`offered ${offer.version} again: tried once in this run, not retried`);
        } else if (offer) {
          this.attemptedVersions.add(offer.version);
          this.stats.offers++;
          await this.update(offer);
          // The ETag names the running version: a new one (after install) must be asked for.
          this.otaEtag = null;
          waitMs = 0;
        }
      } else if (answer.retryAfterMs !== undefined) {
        waitMs = Math.max(waitMs, answer.retryAfterMs);
      }
      if (this.state === 'failed' || !(await this.run.sleep(waitMs))) return;
    }
  }

  /** Events are idempotent on (ts, type): a report retried after a lost answer stores nothing twice. */
  private async report(events: OtaEvent[]): Promise<boolean> {
    for (let start = 0; start < events.length; start += MAX_EVENTS_PER_REPORT) {
      const chunk = events.slice(start, start + MAX_EVENTS_PER_REPORT);
      const answer = await this.retrying('ota events', () => this.authed((headers, signal) => this.api.POST('/api/v1/ota/events', { body: { events: chunk }, headers, signal })));
      if (answer.status !== 200 || !answer.data) return false;
      this.stats.otaEvents += answer.data.accepted;
    }
    return true;
  }

  private event(type: OtaEvent['type'], offer: Offer, extra: Partial<OtaEvent> = {}): OtaEvent {
    return { ts: new Date(this.now()).toISOString(), type, fromVersion: this.firmwareVersion, toVersion: offer.version, ...extra };
  }

  private async update(offer: Offer): Promise<void> {
    this.state = 'updating';
    try {
      const { trustedKeys } = this.fleet.options;
      const expected = trustedKeys.length > 0 ? checkSignedOffer(offer, { hardwareId: this.credentials.hardwareId, runs: this.firmwareVersion }, trustedKeys) : { sha256: offer.sha256, size: offer.size, signed: false };
      if ('errorCode' in expected) {
        await this.failed(offer, expected, [this.event('check', offer)]);
        return;
      }
      this.log(`offered ${offer.version}${expected.signed ? ' (signature and manifest hold)' : ''}: downloading ${offer.url}${offer.url.startsWith('/') ? ' from the service' : ''}`);
      this.logLine('info', 'ota', `offered ${offer.version}, downloading`);
      if (!(await this.report([this.event('check', offer), this.event('download_started', offer)]))) return;
      const failure = await this.download(offer, expected);
      if (failure) {
        await this.failed(offer, failure);
        return;
      }
      this.stats.downloads++;
      if (!(await this.report([this.event('download_completed', offer, { progressPct: 100 }), this.event('install_started', offer)]))) return;
      if (!(await this.run.sleep((this.fleet.options.installSec * 1000) / 2))) return;
      if (!(await this.report([this.event('install_succeeded', offer)]))) return;
      // Reboot into the new image: tokens lived in RAM, the secret in flash.
      const previous = this.firmwareVersion;
      if (!(await this.restart('sw', { install: offer.version }))) return;
      await this.report([{ ts: new Date(this.now()).toISOString(), type: 'boot_confirmed', fromVersion: previous, toVersion: offer.version }]);
      this.stats.installed++;
      this.log(`runs ${offer.version}`);
    } finally {
      if (this.state === 'updating') this.state = 'online';
    }
  }

  /** The image is discarded, the gateway keeps its version and reports why (after `before`, the events not sent yet). */
  private async failed(offer: Offer, failure: OtaFailure, before: OtaEvent[] = []): Promise<void> {
    this.stats.updateFailures++;
    if (failure.type === 'verify_failed') this.stats.otaRefused[failure.errorCode] = (this.stats.otaRefused[failure.errorCode] ?? 0) + 1;
    this.log(`${failure.type} ${failure.errorCode}: ${failure.message}`);
    this.logLine('error', 'ota', `${offer.version}: ${failure.type} ${failure.errorCode}: ${failure.message}`);
    await this.report([...before, this.event(failure.type, offer, { errorCode: failure.errorCode, message: failure.message })]);
  }

  /**
   * Streams the image through SHA-256, with a progress event at most every 30 s (the service coalesces closer ones), and
   * compares it with what it must be. A signed release's image that differs from its manifest in any way is E_SHA_MISMATCH.
   *
   * An image the service keeps (the offer's url a path) is fetched from the service with the device token (a 401 is
   * answered by a refresh and one more try). A cut (no answer, or the connection lost mid-way) is resumed from the bytes
   * received, with `Range` and `If-Range` (the first answer's ETag), at most DOWNLOAD_RESUMES times; a 503 is waited out
   * for its Retry-After, then the download goes on where it stopped; a 416 to a resume means every byte is here already.
   * An image elsewhere is fetched once, without the token, as a CDN serves it.
   */
  private async download(offer: Offer, expected: ExpectedImage): Promise<OtaFailure | null> {
    const { size, signed } = expected;
    const sizeMismatch = signed ? 'E_SHA_MISMATCH' : 'E_SIZE_MISMATCH';
    let source: { url: string; hosted: boolean };
    try {
      source = imageSource(offer.url, this.fleet.options.url);
    } catch (error) {
      return { type: 'download_failed', errorCode: 'E_URL', message: networkError(error) };
    }
    const from = source.hosted ? 'the service' : 'the image server';
    let hash = createHash('sha256');
    let received = 0;
    /** The first answer's ETag: a resume asks for the rest of that image only (If-Range). */
    let etag: string | null = null;
    let reportedAt = performance.now();
    for (let cuts = 0, busy = 0, unauthorized = 0; ; ) {
      const headers: Record<string, string> = {};
      const resuming = received > 0 && etag !== null;
      let token: string | null = null;
      if (source.hosted) {
        token = await this.accessToken();
        if (!token) return { type: 'download_failed', errorCode: 'E_AUTH', message: 'no device token to download the image with' };
        headers.authorization = `Bearer ${token}`;
        if (resuming) Object.assign(headers, { range: `bytes=${received}-`, 'if-range': etag });
      }
      let cut: string;
      try {
        const response = await fetch(source.url, { headers, signal: AbortSignal.any([AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), this.run.hard.signal]) });
        if (source.hosted) {
          this.correctClock(response.headers.get('date'));
          const problem = response.ok ? undefined : ((await response.json().catch(() => undefined)) as { code?: string } | undefined);
          this.stats.count({ status: response.status, code: problem?.code });
        }
        if (source.hosted && response.status === 401 && unauthorized++ === 0) {
          if (this.tokens?.access === token) this.tokens.expiresAt = 0;
          continue;
        }
        if (source.hosted && response.status === 503 && busy++ < DOWNLOAD_BUSY_WAITS) {
          const retryAfterMs = retryAfterMsOf(response.headers.get('retry-after'));
          const waitMs = retryAfterMs !== undefined ? retryAfterMs + Math.random() * RETRY_AFTER_JITTER_MS : backoffMs(busy - 1);
          if (!(await this.waitToDownload(`download ${offer.version}: 503, every download slot taken`, waitMs))) return { type: 'download_failed', errorCode: 'E_HTTP_503', message: 'stopped waiting for a download slot' };
          continue;
        }
        // Resuming with all of it here already (the cut came after the last byte): nothing more to send.
        if (response.status === 416 && resuming) break;
        if (!(source.hosted ? response.status === 200 || response.status === 206 : response.ok) || !response.body) {
          if (!response.bodyUsed) await response.body?.cancel();
          return { type: 'download_failed', errorCode: `E_HTTP_${response.status}`, message: `${from} answered ${response.status}` };
        }
        if (source.hosted && response.status === 200 && received > 0) {
          // The whole image instead of the rest (If-Range named another one, or Range was ignored): start over.
          this.log(`download ${offer.version}: ${from} sent the whole image again, starting over`);
          hash = createHash('sha256');
          received = 0;
        } else if (source.hosted && response.status === 206 && rangeStartOf(response.headers.get('content-range')) !== received) {
          await response.body.cancel();
          return { type: 'download_failed', errorCode: 'E_HTTP_206', message: `${from} sent ${response.headers.get('content-range') ?? 'a part'}, not bytes ${received}- asked` };
        }
        if (response.status === 200) etag = response.headers.get('etag');
        const length = Number(response.headers.get('content-length') ?? NaN);
        const end = Number.isInteger(length) ? received + length : null;
        for await (const chunk of response.body) {
          received += chunk.byteLength;
          if (received > size) return refusal(sizeMismatch, `the image is larger than ${size} bytes`);
          hash.update(chunk);
          if (performance.now() - reportedAt >= PROGRESS_REPORT_EVERY_MS) {
            reportedAt = performance.now();
            await this.report([this.event('download_progress', offer, { progressPct: Math.floor((received / size) * 100) })]);
          }
        }
        if (!source.hosted || end === null || received >= end) break;
        cut = `the answer ended after ${received} of ${end} bytes`;
      } catch (error) {
        if (!source.hosted || this.run.hard.signal.aborted) return { type: 'download_failed', errorCode: 'E_NETWORK', message: networkError(error) };
        cut = networkError(error);
      }
      if (cuts++ >= DOWNLOAD_RESUMES) return { type: 'download_failed', errorCode: 'E_NETWORK', message: `${cut} (cut ${cuts} times)`.slice(0, 500) };
      if (etag === null && received > 0) {
        // Nothing to make sure the rest is of the same image: start over.
        hash = createHash('sha256');
        received = 0;
      }
      if (!(await this.waitToDownload(`download ${offer.version}: cut at ${received} bytes (${cut})${received > 0 ? ', resuming' : ''}`, backoffMs(cuts - 1)))) {
        return { type: 'download_failed', errorCode: 'E_NETWORK', message: `${cut} (stopped before resuming)`.slice(0, 500) };
      }
    }
    if (received !== size) return refusal(sizeMismatch, `got ${received} of ${size} bytes`);
    if (hash.digest('hex') !== expected.sha256.toLowerCase()) {
      return refusal('E_SHA_MISMATCH', `SHA-256 of the downloaded image does not match the ${signed ? 'signed manifest' : 'release'}`);
    }
    return null;
  }

  /** A wait before a download goes on, logged and counted as a retry; false when the run stopped meanwhile. */
  private async waitToDownload(what: string, waitMs: number): Promise<boolean> {
    const retry = `${what}, retrying in ${(waitMs / 1000).toFixed(1)} s`;
    this.log(retry);
    this.logLine('warn', 'ota', retry);
    this.stats.retries++;
    this.stats.waitedMs += waitMs;
    return this.run.sleep(waitMs);
  }

  // ---- commands ----

  /**
   * A short poll at the config poll's cadence, or (--long-poll) a long poll held by the service
   * until a command comes, polled again as soon as it answers.
   */
  private async commandLoop(): Promise<void> {
    const long = this.fleet.options.longPoll;
    for (let failures = 0; ; ) {
      const startedAt = performance.now();
      let waitMs = long ? 0 : this.fleet.options.configIntervalSec * 1000;
      const answer = await this.authed(
        (headers, signal) =>
          this.api.GET('/api/v1/device/commands', {
            params: { query: long ? { waitSec: LONG_POLL_WAIT_SEC } : {} },
            headers: { ...headers, ...(this.commandsEtag ? { 'if-none-match': this.commandsEtag } : {}) },
            signal,
          }),
        // The service holds a long poll up to waitSec: the timeout is the wait plus the usual one.
        long ? { timeoutMs: LONG_POLL_WAIT_SEC * 1000 + REQUEST_TIMEOUT_MS, untilStop: true } : {},
      );
      if (this.run.stopping && answer.status === 0) return;
      this.stats.commandPolls++;
      if (answer.status === 304 || answer.status === 200) failures = 0;
      if (answer.status === 304) {
        this.stats.commandsUnchanged++;
      } else if (answer.status === 200 && answer.data) {
        this.commandsEtag = answer.etag ?? null;
        await this.runCommands(answer.data.commands);
      } else if (answer.retryAfterMs !== undefined) {
        waitMs = Math.max(waitMs, answer.retryAfterMs + Math.random() * RETRY_AFTER_JITTER_MS);
      } else if (long) {
        waitMs = backoffMs(failures++);
      }
      if (long) waitMs = Math.max(waitMs, MIN_LONG_POLL_SPACING_MS - (performance.now() - startedAt));
      if (this.state === 'failed' || !(await this.run.sleep(waitMs))) return;
    }
  }

  /** One at a time, oldest first. Delivery is at least once: a command run already is not run again, its result is sent again. */
  private async runCommands(commands: Command[]): Promise<void> {
    for (const command of commands) {
      if (this.state === 'failed' || this.run.stopping) return;
      if (this.commandsRun.has(command.commandId)) {
        this.stats.commandRepeats++;
        const status = this.commandsRun.get(command.commandId);
        this.log(`command ${command.commandId} (${command.type}) again: run already${status ? `, reporting ${status} again` : ''}`);
        if (status) await this.reportResult(command, { status });
        continue;
      }
      // Remembered before it runs: a reboot delivered again after the restart must not run twice.
      this.remember(command.commandId, null);
      this.stats.commandsReceived++;
      this.log(`command ${command.commandId}: ${command.type} ${JSON.stringify(command.params)}`);
      this.logLine('info', 'commands', `run ${command.commandId}: ${command.type}`);
      if (await this.execute(command)) {
        // Restarted: the rest of the answer and its ETag were in RAM. Poll again.
        this.commandsEtag = null;
        return;
      }
    }
  }

  /** Runs one command and reports its result; true when the gateway restarted. */
  private async execute(command: Command): Promise<boolean> {
    switch (command.type) {
      case 'reboot': {
        if (!(await this.started(command))) return false;
        if (!(await this.restart('sw'))) return true;
        this.stats.reboots++;
        await this.finish(command, 'succeeded', `restarted, runs ${this.firmwareVersion}`);
        return true;
      }
      case 'ping':
        await this.finish(command, 'succeeded', `runs ${this.firmwareVersion}, up ${Math.round((performance.now() - this.bootedAt) / 1000)} s`);
        return false;
      case 'upload-now': {
        if (!(await this.started(command))) return false;
        const records = await this.flushBuffer();
        await (records === null ? this.finish(command, 'failed', 'uploads stopped before the buffer was sent') : this.finish(command, 'succeeded', `uploaded ${records} buffered records`));
        return false;
      }
      case 'set-log-level': {
        const level = LOG_LEVELS.find((known) => known === command.params.level);
        if (!level) {
          await this.finish(command, 'rejected', `unknown log level ${String(command.params.level)}`);
          return false;
        }
        this.logLevelSet = level;
        this.logLine('info', 'log', `log level ${level}`);
        await this.finish(command, 'succeeded', `log level ${level}`);
        return false;
      }
      case 'collect-logs': {
        // The lines of the span whatever logUpload says; those sent already are at the service.
        if (!(await this.started(command))) return false;
        const sinceSec = Number(command.params.sinceSec);
        const until = performance.now();
        const inSpan = (line: LogLine) => line.mono >= until - sinceSec * 1000 && line.mono <= until;
        const before = this.logLines.filter((line) => line.sent && inSpan(line)).length;
        const upload = await this.sendLogs(inSpan, { flush: false });
        const sent = `uploaded ${upload.sent} log lines of the last ${sinceSec} s${before ? ` (${before} sent before)` : ''}`;
        await (upload.refused ? this.finish(command, 'failed', `${sent}, then: ${upload.refused}`) : this.finish(command, 'succeeded', sent));
        return false;
      }
      case 'custom':
        await this.finish(command, 'rejected', `unknown command ${String(command.params.name)}`);
        return false;
      default:
        // A type newer than this firmware.
        await this.finish(command, 'rejected', `unknown command type ${String((command as { type: unknown }).type)}`);
        return false;
    }
  }

  /** `accepted` before a command that takes a while; false when the service says it ended already (expired). */
  private async started(command: Command): Promise<boolean> {
    const answer = await this.reportResult(command, { status: 'accepted' });
    if (answer.status === 409 || answer.status === 404) return false;
    return answer.status !== 200 || answer.data?.state === 'delivered';
  }

  private async finish(command: Command, status: FinalStatus, output: string): Promise<void> {
    this.remember(command.commandId, status);
    this.stats.commandResults[status]++;
    await this.reportResult(command, { status, output });
  }

  private remember(commandId: string, status: FinalStatus | null): void {
    this.commandsRun.delete(commandId);
    this.commandsRun.set(commandId, status);
    for (const oldest of this.commandsRun.keys()) {
      if (this.commandsRun.size <= REMEMBERED_COMMANDS) break;
      this.commandsRun.delete(oldest);
    }
  }

  /** Results are idempotent: retried like any write. 409 COMMAND_FINISHED (expired, cancelled) and 404: drop the command. */
  private async reportResult(command: Command, body: CommandResult): Promise<Answer<Schemas['CommandResultResponse']>> {
    const answer = await this.retrying('command result', () =>
      this.authed((headers, signal) => this.api.POST('/api/v1/device/commands/{commandId}/result', { params: { path: { commandId: command.commandId } }, body, headers, signal })),
    );
    if (answer.status === 409 || answer.status === 404) {
      this.stats.commandsFinished++;
      this.log(`command ${command.commandId}: ${answer.status} ${answer.code ?? ''}, dropped`);
    }
    return answer;
  }

  /**
   * A reboot command or an update (`sw`, `install`: into that version) or a crash (`panic`): tokens
   * and the ETags held in RAM are gone, what is in NVS (the secret, the commands run, the boot
   * counter) stays, and the gateway logs in again, then reports the reset. Requests of the other
   * loops wait for that login. The telemetry buffer and the log ring are kept (firmware keeps them
   * in flash, or uploads them first).
   */
  private async restart(resetReason: 'sw' | 'panic', { panic, install }: { panic?: Panic; install?: string } = {}): Promise<boolean> {
    await this.reauthenticating;
    const running = this.state === 'updating' ? 'updating' : 'online';
    this.state = 'rebooting';
    // What RTC memory keeps across the reset (the panic handler writes it on a crash).
    const reset = { ts: new Date(this.now()).toISOString(), firmwareVersion: this.firmwareVersion, uptimeSec: Math.round((performance.now() - this.bootedAt) / 1000), ...(panic ? { panic } : {}) };
    if (install) {
      this.credentials.firmwareVersion = install;
      this.fleet.saveState();
    }
    this.tokens = null;
    this.logLevelSet = null;
    this.commandsEtag = null;
    this.log(panic ? `panics (${panic.excCause} in ${panic.task} at ${panic.pc}), restarting` : `restarting${install ? ` into ${install}` : ''}`);
    const restarting = (async () => {
      try {
        // A restart under way completes while the run stops: the gateway then uploads what it buffered.
        if (!(await this.run.sleep((this.fleet.options.installSec * 1000) / 2, { throughStop: true }))) return false;
        this.newBoot(resetReason, reset);
        return await this.login();
      } finally {
        this.reauthenticating = null;
      }
    })();
    this.reauthenticating = restarting;
    let loggedIn: boolean;
    try {
      loggedIn = await restarting;
    } finally {
      if (this.state === 'rebooting') this.state = running;
    }
    if (!loggedIn) return false;
    await this.reportReset();
    return true;
  }
}

class Fleet {
  readonly api: Api;
  readonly run = new Run();
  readonly stats = new Stats();
  readonly gateways: Gateway[];
  readonly options: Options;
  private readonly out: NodeJS.WriteStream;
  private sampling: number;

  constructor(options: Options, fleet: Credentials[], out: NodeJS.WriteStream = process.stderr) {
    this.options = options;
    this.out = out;
    this.api = createClient<paths>({ baseUrl: options.url });
    this.gateways = fleet.map((credentials) => new Gateway(this, credentials));
    this.sampling = fleet.length;
  }

  log(line: string): void {
    if (!this.options.verbose) return;
    if (this.out.isTTY) this.out.write('\r\x1b[2K');
    this.out.write(`${line}\n`);
  }

  sampledAll(): void {
    this.sampling--;
    if (this.sampling === 0 && this.options.iterations !== undefined) this.run.stop();
  }

  saveState(): void {
    const file = this.options.stateFile;
    if (!file) return;
    const gateways = this.gateways.map((gateway) => gateway.credentials);
    writeFileSync(`${file}.tmp`, `${JSON.stringify({ url: this.options.url, gateways }, null, 2)}\n`, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }

  progressLine(): string {
    const s = this.stats;
    const states = this.gateways.map((gateway) => gateway.state);
    const online = states.filter((state) => state === 'online' || state === 'updating').length;
    const failed = states.filter((state) => state === 'failed').length;
    const seconds = Math.round((Date.now() - s.startedAt) / 1000);
    const limited = Object.entries(s.answers)
      .filter(([key]) => key.startsWith('429') || key.startsWith('503') || key === 'no answer')
      .reduce((sum, [, count]) => sum + count, 0);
    return (
      `[${seconds}s] online ${online}/${this.gateways.length}${failed ? ` (${failed} failed)` : ''} · telemetry ${s.accepted}/${s.sampled} stored in ${s.uploads} uploads` +
      ` · config ${s.configPolls} polls (${s.configUnchanged} × 304) · OTA ${s.otaPolls} polls, ${s.installed} installed${s.updateFailures ? `, ${s.updateFailures} failed` : ''}` +
      ` · commands ${s.commandsReceived} run` +
      ` · logs ${s.linesAccepted} lines in ${s.logUploads} uploads${s.crashes ? ` · ${s.crashes} crashes` : ''}` +
      ` · retries ${s.retries}${limited ? ` (${limited} × 429/503/no answer)` : ''}`
    );
  }

  summary(): Summary {
    const s = this.stats;
    return {
      url: this.options.url,
      seconds: Math.round((Date.now() - s.startedAt) / 100) / 10,
      gateways: this.gateways.length,
      online: this.gateways.filter((gateway) => gateway.cameOnline && !gateway.failure).length,
      failed: this.gateways.flatMap((gateway) => (gateway.failure ? [{ deviceId: gateway.deviceId, reason: gateway.failure }] : [])),
      identity: { registered: s.registered, fromState: s.fromState, logins: s.logins, refreshes: s.refreshes },
      telemetry: {
        sampled: s.sampled,
        uploads: s.uploads,
        accepted: s.accepted,
        duplicates: s.duplicates,
        rejected: s.rejected,
        restamped: s.restamped,
        dropped: s.dropped,
        unsent: this.gateways.reduce((sum, gateway) => sum + gateway.unsent, 0),
      },
      perGateway: this.gateways.map((gateway) => ({
        deviceId: gateway.deviceId,
        firmwareVersion: gateway.firmwareVersion,
        logLevel: gateway.logLevel,
        sampled: gateway.sampled,
        stored: gateway.accepted,
        crashes: gateway.crashes,
      })),
      config: { polls: s.configPolls, unchanged: s.configUnchanged, applied: s.configApplied },
      ota: {
        trustedKeys: this.options.trustedKeys.length,
        polls: s.otaPolls,
        unchanged: s.otaUnchanged,
        offers: s.offers,
        downloads: s.downloads,
        installed: s.installed,
        failed: s.updateFailures,
        refused: s.otaRefused,
        eventsAccepted: s.otaEvents,
      },
      commands: {
        mode: this.options.longPoll ? 'long poll' : 'short poll',
        polls: s.commandPolls,
        unchanged: s.commandsUnchanged,
        received: s.commandsReceived,
        repeats: s.commandRepeats,
        ...s.commandResults,
        finished: s.commandsFinished,
        reboots: s.reboots,
      },
      logs: {
        logged: s.linesLogged,
        overwritten: s.linesOverwritten,
        uploads: s.logUploads,
        accepted: s.linesAccepted,
        duplicates: s.lineDuplicates,
        rejected: s.linesRejected,
        restamped: s.linesRestamped,
        dropped: s.linesDropped,
        quotaRefusals: s.logQuotaRefusals,
      },
      crashes: { crashed: s.crashes, reported: s.resetReports, repeats: s.resetRepeats },
      retries: s.retries,
      waitedSec: Math.round(s.waitedMs / 100) / 10,
      clockSteps: s.clockSteps,
      answers: s.answers,
    };
  }
}

export interface Summary {
  url: string;
  seconds: number;
  gateways: number;
  /** Came online and did not give up. */
  online: number;
  failed: Array<{ deviceId: string; reason: string }>;
  identity: { registered: number; fromState: number; logins: number; refreshes: number };
  telemetry: { sampled: number; uploads: number; accepted: number; duplicates: number; rejected: Record<string, number>; restamped: number; dropped: number; unsent: number };
  /**
   * `stored`: records the service confirmed for this gateway (accepted or already stored); `logLevel`: set-log-level's, else the
   * configuration's; `crashes`: its panics (--crash-every).
   */
  perGateway: Array<{ deviceId: string; firmwareVersion: string; logLevel: string; sampled: number; stored: number; crashes: number }>;
  config: { polls: number; unchanged: number; applied: number };
  /** `trustedKeys`: --trust-key's (0: signatures not checked); `refused`: releases reported verify_failed, by errorCode (counted in `failed` too). */
  ota: { trustedKeys: number; polls: number; unchanged: number; offers: number; downloads: number; installed: number; failed: number; refused: Record<string, number>; eventsAccepted: number };
  /**
   * `received`: commands run (each once); `repeats`: deliveries of a command run already, dropped;
   * `succeeded`, `failed`, `rejected`: the results reported; `finished`: results answered 409 or 404 (dropped).
   */
  commands: { mode: 'short poll' | 'long poll'; polls: number; unchanged: number; received: number; repeats: number; succeeded: number; failed: number; rejected: number; finished: number; reboots: number };
  /**
   * `logged`: lines put in the gateways' ring buffers (at their log level); `overwritten`: pushed out of a full ring; `uploads`:
   * POST /device/logs requests; `accepted`, `duplicates`, `rejected` (by code): as the service answered; `dropped`: refused for good;
   * `quotaRefusals`: 429 LOG_QUOTA_EXCEEDED answers, after each of which the gateway waited for its Retry-After.
   */
  logs: { logged: number; overwritten: number; uploads: number; accepted: number; duplicates: number; rejected: Record<string, number>; restamped: number; dropped: number; quotaRefusals: number };
  /** `crashed`: panics simulated (--crash-every); `reported`: reset reasons the service stored, by reason (a power-on, `sw` after a restart, `panic`); `repeats`: reports answered 200. */
  crashes: { crashed: number; reported: Partial<Record<ResetReason, number>>; repeats: number };
  retries: number;
  waitedSec: number;
  clockSteps: number;
  /** Answers by status and problem code, e.g. "429 RATE_LIMITED"; "no answer" for network errors and timeouts. */
  answers: Record<string, number>;
}

function textSummary(s: Summary): string {
  const levels = new Map<string, number>();
  for (const gateway of s.perGateway) levels.set(gateway.logLevel, (levels.get(gateway.logLevel) ?? 0) + 1);
  const logLevels = [...levels].map(([level, count]) => `${count} × ${level}`).join(', ') || 'none';
  const rejected = Object.entries(s.telemetry.rejected).map(([code, count]) => `${count} ${code}`).join(', ') || 'none';
  const linesRejected = Object.entries(s.logs.rejected).map(([code, count]) => `${count} ${code}`).join(', ') || 'none';
  const refused = Object.entries(s.ota.refused).map(([code, count]) => `${count} ${code}`).join(', ');
  const signatures = s.ota.trustedKeys ? `signatures checked with ${s.ota.trustedKeys} trusted key${s.ota.trustedKeys === 1 ? '' : 's'}` : 'signatures not checked';
  const resets = Object.entries(s.crashes.reported).map(([reason, count]) => `${count} ${reason}`).join(', ') || 'none';
  const answers = Object.entries(s.answers)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, count]) => `${key}: ${count}`)
    .join(', ');
  return [
    `Gateway simulator: ${s.gateways} gateways for ${s.seconds} s against ${s.url}`,
    `  online      ${s.online}/${s.gateways}${s.failed.map((f) => `\n  failed      ${f.deviceId}: ${f.reason}`).join('')}`,
    `  identity    ${s.identity.registered} registered, ${s.identity.fromState} from the state file, ${s.identity.logins} logins, ${s.identity.refreshes} refreshes`,
    `  telemetry   ${s.telemetry.sampled} sampled, ${s.telemetry.accepted} stored (${s.telemetry.duplicates} duplicates) in ${s.telemetry.uploads} uploads; rejected: ${rejected}; re-stamped ${s.telemetry.restamped}, dropped ${s.telemetry.dropped}, unsent ${s.telemetry.unsent}`,
    `  config      ${s.config.polls} polls, ${s.config.unchanged} unchanged (304), ${s.config.applied} versions applied`,
    `  OTA         ${s.ota.polls} checks, ${s.ota.unchanged} unchanged (304), ${s.ota.offers} offers, ${s.ota.downloads} verified downloads, ${s.ota.installed} installed, ${s.ota.failed} failed${refused ? ` (refused: ${refused})` : ''}; ${signatures}; ${s.ota.eventsAccepted} events stored`,
    `  commands    ${s.commands.polls} ${s.commands.mode}s, ${s.commands.unchanged} unchanged (304); ${s.commands.received} run: ${s.commands.succeeded} succeeded, ${s.commands.failed} failed, ${s.commands.rejected} rejected; ${s.commands.repeats} repeats dropped, ${s.commands.finished} ended elsewhere (409, 404), ${s.commands.reboots} reboots`,
    `  log levels  ${logLevels}`,
    `  logs        ${s.logs.logged} lines logged (${s.logs.overwritten} overwritten), ${s.logs.accepted} stored (${s.logs.duplicates} duplicates) in ${s.logs.uploads} uploads; rejected: ${linesRejected}; re-stamped ${s.logs.restamped}, dropped ${s.logs.dropped}; ${s.logs.quotaRefusals} refused by the daily quota (429)`,
    `  crashes     ${s.crashes.crashed} simulated; reset reasons reported: ${resets}${s.crashes.repeats ? ` (${s.crashes.repeats} repeats)` : ''}`,
    `  retries     ${s.retries} (waited ${s.waitedSec} s in all); clock steps from the Date header: ${s.clockSteps}`,
    `  answers     ${answers}`,
  ].join('\n');
}

function fleetOf(options: Options): Credentials[] {
  if (options.stateFile && existsSync(options.stateFile)) {
    const saved = JSON.parse(readFileSync(options.stateFile, 'utf8')) as { gateways: Credentials[] };
    return saved.gateways;
  }
  return Array.from({ length: options.gateways }, (_, index) => {
    const deviceId = `${options.prefix}-${String(index + 1).padStart(4, '0')}`;
    // Firmware 0.1.4 and later must register with a claim code (400 CLAIM_CODE_REQUIRED otherwise).
    const needsClaimCode = compareVersions(options.firmware, '0.1.4') >= 0;
    return { deviceId, hardwareId: `sim-hw-${createHash('sha256').update(deviceId).digest('hex').slice(0, 12)}`, firmwareVersion: options.firmware, ...(needsClaimCode ? { claimCode: claimCode() } : {}) };
  });
}

/** REGISTRATION_MODE=allowlist: an administrator lists the fleet's deviceId/hardwareId pairs first. */
async function importAllowlist(api: Api, options: Options, fleet: Credentials[]): Promise<void> {
  if (!options.adminEmail || !options.adminPassword) return;
  const login = await api.POST('/api/v1/auth/login', { body: { email: options.adminEmail, password: options.adminPassword } });
  if (!login.data) throw new Error(`admin login answered ${login.response.status} ${login.error?.code ?? ''}`);
  const headers = { authorization: `Bearer ${login.data.accessToken}` };
  const pending = fleet.filter((gateway) => !gateway.deviceSecret).map(({ deviceId, hardwareId }) => ({ deviceId, hardwareId }));
  for (let start = 0; start < pending.length; start += 5000) {
    const { response, error } = await api.POST('/api/v1/admin/devices/allowlist', { body: { entries: pending.slice(start, start + 5000) }, headers });
    if (response.status !== 200) throw new Error(`allowlist import answered ${response.status} ${error?.code ?? ''}`);
  }
}

/** Runs the fleet until --duration, --iterations or Ctrl-C; returns the summary. */
export async function simulate(options: Options): Promise<{ summary: Summary; ok: boolean }> {
  const credentials = fleetOf(options);
  const fleet = new Fleet(options, credentials);
  await importAllowlist(fleet.api, options, credentials);
  const err = process.stderr;
  let secondSignal = false;
  const onSignal = () => {
    if (secondSignal || fleet.run.stopping) {
      fleet.run.hard.abort();
      return;
    }
    secondSignal = true;
    err.write(`${err.isTTY ? '\r\x1b[2K' : ''}Stopping: uploading what is buffered (Ctrl-C again to quit at once)…\n`);
    fleet.run.stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const durationTimer = options.durationSec !== undefined ? setTimeout(() => fleet.run.stop(), options.durationSec * 1000) : undefined;
  const progress = setInterval(
    () => {
      if (err.isTTY) err.write(`\r\x1b[2K${fleet.progressLine()}`);
      else err.write(`${fleet.progressLine()}\n`);
    },
    err.isTTY ? 500 : 5000,
  );
  try {
    await Promise.all(fleet.gateways.map((gateway) => gateway.live()));
  } finally {
    clearInterval(progress);
    clearTimeout(durationTimer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    fleet.saveState();
  }
  if (err.isTTY) err.write('\r\x1b[2K');
  const summary = fleet.summary();
  return { summary, ok: summary.online === summary.gateways && summary.telemetry.dropped === 0 && summary.telemetry.unsent === 0 };
}

async function main(): Promise<void> {
  let options: Options | 'help';
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${HELP}\n`);
    process.exit(2);
  }
  if (options === 'help') {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const { summary, ok } = await simulate(options);
  process.stdout.write(options.json ? `${JSON.stringify(summary)}\n` : `${textSummary(summary)}\n`);
  process.exitCode = ok ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
