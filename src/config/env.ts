import { plainToInstance, Transform } from 'class-transformer';
import { IsBoolean, IsEmail, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, validateSync } from 'class-validator';
import { guaranteedRetrySpanSec, MIN_DELIVERY_RETRY_SPAN_SEC } from '../shared/jobs/retry-policy.js';

const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value);
const toBoolean = ({ value }: { value: unknown }) => (value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : value);
const blankToUndefined = ({ value }: { value: unknown }) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const toOptionalInt = ({ value }: { value: unknown }) => toInt({ value: blankToUndefined({ value }) });

/** TELEMETRY_SETTLED_HOURS when unset: late records are expected for two days. */
export const DEFAULT_SETTLED_HOURS = 48;

/**
 * Every environment variable the service reads. Validated once at start; a bad value stops the
 * process with one message naming each offending variable. docs/operations.md documents the same table.
 */
export class Env {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT = 3000;

  @IsString() @MinLength(1)
  HOST = '0.0.0.0';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** `auto`: coloured lines for people under `development` when stdout is a terminal, JSON lines otherwise. */
  @IsIn(['auto', 'json', 'pretty'])
  LOG_FORMAT: 'auto' | 'json' | 'pretty' = 'auto';

  @Transform(blankToUndefined) @IsOptional() @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL?: string;

  @IsString() @MinLength(1)
  DATA_DIR = './.data';

  @Transform(toInt) @IsInt() @Min(1) @Max(65535)
  EMBEDDED_POSTGRES_PORT = 54329;

  @Transform(toInt) @IsInt() @Min(1) @Max(200)
  DB_POOL_SIZE = 10;

  /** Longest wait for a database connection (a new one, or a free one from the pool) before 503. */
  @Transform(toInt) @IsInt() @Min(100) @Max(60_000)
  DATABASE_CONNECT_TIMEOUT_MS = 3000;

  /** Longest a statement may run before PostgreSQL cancels it (503); 0 for no limit. */
  @Transform(toInt) @IsInt() @Min(0) @Max(600_000)
  DATABASE_STATEMENT_TIMEOUT_MS = 5000;

  /**
   * Comma-separated postgres:// URLs of streaming replicas. Reads that may be a few seconds old
   * (history, export, battery energy and health, event and audit logs, alert and device lists) go to
   * one that is within REPLICA_MAX_LAG_MS of the primary; everything else stays on DATABASE_URL.
   */
  @Transform(blankToUndefined) @IsOptional() @IsString() @MaxLength(4000)
  @Matches(/^postgres(ql)?:\/\/[^\s,]+(,\s*postgres(ql)?:\/\/[^\s,]+)*$/, { message: 'DATABASE_REPLICA_URLS must be comma-separated postgres:// URLs' })
  DATABASE_REPLICA_URLS?: string;

  /** A replica further behind the primary than this is skipped (the primary serves) until it catches up. */
  @Transform(toInt) @IsInt() @Min(100) @Max(600_000)
  REPLICA_MAX_LAG_MS = 5000;

  /** How often each replica's lag is measured; the measurement rounds up to this. */
  @Transform(toInt) @IsInt() @Min(50) @Max(60_000)
  REPLICA_CHECK_INTERVAL_MS = 1000;

  @Transform(blankToUndefined) @IsOptional() @IsString() @MinLength(32, { message: 'DEVICE_JWT_SECRET must be at least 32 characters' })
  DEVICE_JWT_SECRET?: string;

  @Transform(blankToUndefined) @IsOptional() @IsString() @MinLength(32, { message: 'CUSTOMER_JWT_SECRET must be at least 32 characters' })
  CUSTOMER_JWT_SECRET?: string;

  @Transform(blankToUndefined) @IsOptional() @IsString() @MinLength(32, { message: 'SECRET_PEPPER must be at least 32 characters' })
  SECRET_PEPPER?: string;

  @Transform(toInt) @IsInt() @Min(60) @Max(86_400)
  DEVICE_ACCESS_TOKEN_TTL_SEC = 3600;

  @Transform(toInt) @IsInt() @Min(1) @Max(365)
  DEVICE_REFRESH_TOKEN_TTL_DAYS = 30;

  @Transform(toInt) @IsInt() @Min(0) @Max(86_400)
  REGISTRATION_RETRY_WINDOW_SEC = 600;

  /**
   * Low-entropy proofs only: failed customer logins per e-mail address and rejected registration
   * retries (claim code) per device id. Device-secret logins have no per-device limit: a 256-bit
   * secret cannot be guessed, and a per-device lockout would let anyone lock a gateway out.
   */
  @Transform(toInt) @IsInt() @Min(1) @Max(10_000)
  LOGIN_MAX_FAILURES_PER_DEVICE = 10;

  @Transform(toInt) @IsInt() @Min(1) @Max(100_000)
  LOGIN_MAX_FAILURES_PER_ADDRESS = 50;

  /**
   * The per-address limits count an IPv6 client by its network of this many bits: a subscriber
   * gets a whole /64 and may use any address in it. 128 counts single addresses.
   */
  @Transform(toInt) @IsInt() @Min(32) @Max(128)
  RATE_LIMIT_IPV6_PREFIX = 64;

  @Transform(toInt) @IsInt() @Min(1) @Max(86_400)
  LOGIN_FAILURE_WINDOW_SEC = 900;

  /**
   * Entries each per-device cache of an instance keeps at most (device snapshots, alert rules,
   * battery readings, OTA outcomes, upload blocks); the least recently used goes. Past it, devices
   * are read from the database more often; below it, memory does not grow with the fleet.
   */
  @Transform(toInt) @IsInt() @Min(100) @Max(10_000_000)
  DEVICE_CACHE_MAX_ENTRIES = 20_000;

  /**
   * Accounts the customer-session cache of an instance keeps at most, each with up to 16 of its
   * sessions; the least recently used goes.
   */
  @Transform(toInt) @IsInt() @Min(100) @Max(10_000_000)
  ACCOUNT_CACHE_MAX_ENTRIES = 20_000;

  /** Set: the failure limits live in this Redis, shared by every instance. Unset: in process memory (one instance). */
  @Transform(blankToUndefined) @IsOptional() @Matches(/^rediss?:\/\/\S+$/, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  /** Start of every key the service writes to Redis, so deployments can share one server. */
  @Matches(/^[A-Za-z0-9_.:-]{1,64}$/, { message: 'REDIS_KEY_PREFIX must be 1-64 letters, digits or _ . : -' })
  REDIS_KEY_PREFIX = 'dcs:';

  @Transform(blankToUndefined) @IsOptional() @IsString() @MaxLength(2000)
  TRUST_PROXY?: string;

  /** PEM certificate chain and private key: both set, the service serves HTTPS (HTTP/1.1 and HTTP/2) itself. */
  @Transform(blankToUndefined) @IsOptional() @IsString()
  TLS_CERT_FILE?: string;

  @Transform(blankToUndefined) @IsOptional() @IsString()
  TLS_KEY_FILE?: string;

  /** Comma-separated browser origins allowed to call the API (the dashboard), e.g. https://dash.example.com. */
  @Transform(blankToUndefined) @IsOptional() @IsString() @MaxLength(2000)
  @Matches(/^https?:\/\/[^\s,/]+(,\s*https?:\/\/[^\s,/]+)*$/, { message: 'CORS_ORIGINS must be comma-separated origins such as https://dash.example.com' })
  CORS_ORIGINS?: string;

  @Transform(toInt) @IsInt() @Min(60) @Max(86_400)
  CUSTOMER_ACCESS_TOKEN_TTL_SEC = 900;

  @Transform(toInt) @IsInt() @Min(1) @Max(365)
  CUSTOMER_REFRESH_TOKEN_TTL_DAYS = 30;

  /**
   * A refresh repeated with the token it just rotated, within this many seconds and while the
   * successor is unused, gets the same pair again instead of reuse detection (a gateway whose
   * HTTP client timed out and retried). 0: every repeat is reuse.
   */
  @Transform(toInt) @IsInt() @Min(0) @Max(300)
  REFRESH_REUSE_GRACE_SEC = 30;

  @Transform(toBoolean) @IsBoolean({ message: 'EMAIL_VERIFICATION_REQUIRED must be true or false' })
  EMAIL_VERIFICATION_REQUIRED = true;

  @Transform(blankToUndefined) @IsOptional() @Matches(/^smtps?:\/\//, { message: 'SMTP_URL must be an smtp:// or smtps:// URL' })
  SMTP_URL?: string;

  @IsString() @MinLength(3) @MaxLength(320)
  MAIL_FROM = 'Device Cloud <no-reply@localhost>';

  /** Base of the links in mails. Unset: the address the service listens on (development). */
  @Transform(blankToUndefined) @IsOptional() @Matches(/^https?:\/\/[^\s]+$/, { message: 'PUBLIC_BASE_URL must be an http(s) URL' })
  PUBLIC_BASE_URL?: string;

  @Transform(toInt) @IsInt() @Min(1) @Max(100)
  RESEND_VERIFICATION_MAX_PER_HOUR = 3;

  /** Password reset requests per e-mail address an hour, whether or not it has an account. */
  @Transform(toInt) @IsInt() @Min(1) @Max(1_000)
  PASSWORD_RESET_MAX_PER_EMAIL_PER_HOUR = 3;

  @Transform(toInt) @IsInt() @Min(1) @Max(1_000_000)
  PASSWORD_RESET_MAX_PER_ADDRESS_PER_HOUR = 20;

  @Transform(toInt) @IsInt() @Min(1) @Max(1_000_000)
  SIGNUP_MAX_PER_ADDRESS_PER_HOUR = 10;

  /**
   * Mails and webhooks are retried with exponential backoff and jitter: the n-th retry waits
   * between half and all of DELIVERY_RETRY_DELAY_SEC × 2^n, at most DELIVERY_RETRY_DELAY_MAX_SEC,
   * DELIVERY_RETRY_LIMIT times; then the delivery is kept as failed (GET /api/v1/admin/deliveries).
   * The defaults keep trying for more than 24 h whatever the jitter draws (src/shared/jobs/retry-policy.ts).
   */
  @Transform(toInt) @IsInt() @Min(1) @Max(3_600)
  DELIVERY_RETRY_DELAY_SEC = 5;

  @Transform(toInt) @IsInt() @Min(1) @Max(86_400)
  DELIVERY_RETRY_DELAY_MAX_SEC = 3_600;

  @Transform(toInt) @IsInt() @Min(0) @Max(1_000)
  DELIVERY_RETRY_LIMIT = 35;

  /** Alert rules are evaluated on stored telemetry; false turns alerting off (the benchmark's comparison). */
  @Transform(toBoolean) @IsBoolean({ message: 'ALERTS_ENABLED must be true or false' })
  ALERTS_ENABLED = true;

  /**
   * The ingest statement marks the hours whose battery energy its records change, and they are
   * recomputed; false turns that off (the benchmark's comparison): energy answers then hold what
   * was computed while it was on.
   */
  @Transform(toBoolean) @IsBoolean({ message: 'BATTERY_ANALYTICS_ENABLED must be true or false' })
  BATTERY_ANALYTICS_ENABLED = true;

  /**
   * Development and tests only: webhooks may also use http:// and loopback, private or link-local
   * addresses. Refused when NODE_ENV=production.
   */
  @Transform(toBoolean) @IsBoolean({ message: 'WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false' })
  WEBHOOK_ALLOW_PRIVATE_TARGETS = false;

  /** A webhook whose every delivery failed for this long is disabled and its owner mailed. */
  @Transform(toInt) @IsInt() @Min(10) @Max(30 * 86_400)
  WEBHOOK_DISABLE_AFTER_SEC = 86_400;

  /** How often one instance looks for devices whose telemetry stopped (device.offline). */
  @Transform(toInt) @IsInt() @Min(200) @Max(600_000)
  OFFLINE_CHECK_INTERVAL_MS = 10_000;

  /** How often an idle job worker looks for due jobs (retries, delayed jobs); new jobs wake it at once. */
  @Transform(toInt) @IsInt() @Min(500) @Max(60_000)
  JOB_POLL_INTERVAL_MS = 2_000;

  @Transform(blankToUndefined) @IsOptional() @IsEmail({}, { message: 'ADMIN_EMAIL must be an e-mail address' })
  ADMIN_EMAIL?: string;

  @Transform(blankToUndefined) @IsOptional() @IsString() @MinLength(10, { message: 'ADMIN_PASSWORD must be at least 10 characters' }) @MaxLength(128)
  ADMIN_PASSWORD?: string;

  @IsIn(['open', 'allowlist'])
  REGISTRATION_MODE: 'open' | 'allowlist' = 'open';

  /** New devices one client address may register per REGISTRATION_WINDOW_SEC, in either mode; then 429. */
  @Transform(toInt) @IsInt() @Min(1) @Max(1_000_000)
  REGISTRATION_MAX_PER_ADDRESS = 30;

  @Transform(toInt) @IsInt() @Min(1) @Max(86_400)
  REGISTRATION_WINDOW_SEC = 3600;

  @Transform(toInt) @IsInt() @Min(60) @Max(30 * 86_400)
  RE_REGISTRATION_WINDOW_SEC = 86_400;

  @Transform(toInt) @IsInt() @Min(1) @Max(10_000)
  CLAIM_MAX_FAILURES_PER_DEVICE = 5;

  @Transform(toInt) @IsInt() @Min(1) @Max(10_000)
  CLAIM_MAX_FAILURES_PER_CUSTOMER = 20;

  @Transform(toInt) @IsInt() @Min(1) @Max(86_400)
  CLAIM_FAILURE_WINDOW_SEC = 900;

  @Transform(toInt) @IsInt() @Min(1) @Max(3650)
  TELEMETRY_RETENTION_DAYS = 365;

  /**
   * Hours after which a UTC day's records are settled: compacted into one row per device, battery
   * and day (records that come later still land). At least a day, so today is never compacted.
   */
  @Transform(toInt) @IsInt() @Min(24) @Max(8760)
  TELEMETRY_SETTLED_HOURS = DEFAULT_SETTLED_HOURS;

  /** Compaction of settled days, queued hourly and at start; off, days stay rows (reads and ingest work alike). */
  @Transform(toBoolean) @IsBoolean()
  TELEMETRY_COMPACTION_ENABLED = true;

  /** Bytes of log lines (messages and tags) one device may store per UTC day; then 429 until midnight UTC. */
  @Transform(toInt) @IsInt() @Min(1024) @Max(1_073_741_824)
  LOG_BYTES_PER_DEVICE_PER_DAY = 1_048_576;

  @Transform(toInt) @IsInt() @Min(1) @Max(365)
  LOG_RETENTION_DAYS = 14;

  /** Telemetry uploads one device may make per TELEMETRY_RATE_WINDOW_SEC; then 429. */
  @Transform(toInt) @IsInt() @Min(1) @Max(1_000_000)
  TELEMETRY_MAX_REQUESTS_PER_DEVICE = 120;

  @Transform(toInt) @IsInt() @Min(1) @Max(3600)
  TELEMETRY_RATE_WINDOW_SEC = 60;

  /** A device that started a download or install and reported nothing for this long counts as stalled. */
  @Transform(toInt) @IsInt() @Min(60) @Max(7 * 86_400)
  OTA_STALL_TIMEOUT_SEC = 3600;

  /**
   * Refuse firmware releases without a valid signature by a registered key. Unset: on, except
   * under NODE_ENV=development (firmwareSignatureRequired).
   */
  @Transform(toBoolean) @IsOptional() @IsBoolean({ message: 'FIRMWARE_REQUIRE_SIGNATURE must be true or false' })
  FIRMWARE_REQUIRE_SIGNATURE?: boolean;

  /** Largest firmware image the service keeps (PUT /admin/firmware/{id}/image). */
  @Transform(toInt) @IsInt() @Min(1024) @Max(256 * 1024 * 1024)
  FIRMWARE_MAX_BYTES = 16 * 1024 * 1024;

  /** Image downloads one instance streams at once; the next is answered 503 with Retry-After. */
  @Transform(toInt) @IsInt() @Min(1) @Max(10_000)
  FIRMWARE_MAX_CONCURRENT_DOWNLOADS = 100;

  /** Image bytes per second one instance sends at most, all downloads together; 0 is no limit. */
  @Transform(toInt) @IsInt() @Min(0) @Max(10_000_000_000)
  FIRMWARE_DOWNLOAD_BYTES_PER_SEC = 16_000_000;

  @Transform(toInt) @IsInt() @Min(1024) @Max(16 * 1024 * 1024)
  BODY_LIMIT_BYTES = 256 * 1024;

  /** Time a client has to send a whole request, headers and body; also the wait for the first byte on a new connection. */
  @Transform(toInt) @IsInt() @Min(1000) @Max(600_000)
  REQUEST_TIMEOUT_MS = 10_000;

  /**
   * How long an idle keep-alive connection stays open. Above the gateways' upload interval (60 s),
   * so an upload reuses its connection instead of paying a new TLS handshake; a load balancer in
   * front must time idle connections out sooner than this.
   */
  @Transform(toInt) @IsInt() @Min(1000) @Max(600_000)
  KEEP_ALIVE_TIMEOUT_MS = 72_000;

  /** After SIGTERM/SIGINT, how long the listener stays open with readiness down, so load balancers stop sending first. */
  @Transform(toInt) @IsInt() @Min(0) @Max(60_000)
  SHUTDOWN_DELAY_MS = 2000;

  @Transform(toInt) @IsInt() @Min(0) @Max(120_000)
  SHUTDOWN_GRACE_MS = 20_000;

  /** Open dashboard streams one account may hold on one instance; the next is refused with 429. */
  @Transform(toInt) @IsInt() @Min(1) @Max(1000)
  STREAM_MAX_PER_USER = 10;

  /** Open dashboard streams one instance holds in all; the next is refused with 503. */
  @Transform(toInt) @IsInt() @Min(1) @Max(100_000)
  STREAM_MAX_CONNECTIONS = 10_000;

  /** A frame to a stream quiet for this long goes out at once; later ones within the window go out together at its end (0: each at once). */
  @Transform(toInt) @IsInt() @Min(0) @Max(1000)
  STREAM_COALESCE_MS = 750;

  /** A comment line on every open stream this often, so proxies and clients see it alive. */
  @Transform(toInt) @IsInt() @Min(100) @Max(300_000)
  STREAM_HEARTBEAT_MS = 15_000;

  /** Backlog (characters) a stream may keep for a client that does not read: above it for over a second, or ever above 16 times it, the stream is dropped. */
  @Transform(toInt) @IsInt() @Min(4096) @Max(64 * 1024 * 1024)
  STREAM_MAX_BUFFERED_BYTES = 256 * 1024;

  /** CSV exports one account may run at once on one instance; the next is refused with 429. */
  @Transform(toInt) @IsInt() @Min(1) @Max(100)
  EXPORT_MAX_PER_USER = 2;

  /**
   * CSV exports one instance runs at once (each holds a database connection until it ends); the
   * next is refused with 429. Below DB_POOL_SIZE. Unset: a third of the pool, at least one
   * (exportMaxConcurrent).
   */
  @Transform(toOptionalInt) @IsOptional() @IsInt() @Min(1) @Max(199)
  EXPORT_MAX_CONCURRENT?: number;

  /**
   * Memory (MiB) an instance keeps of history answers' whole slots (an hour of 5-minute buckets, say)
   * and of their edge slots' records, checked against the database's record count at every use
   * (HistoryChunkCache). 0: off.
   */
  @Transform(toInt) @IsInt() @Min(0) @Max(4096)
  HISTORY_CACHE_MB = 128;

  /** Above 0: every that many ms, a JSON line with the event-loop delay on stdout (the benchmark's soak reads it). */
  @Transform(toInt) @IsInt() @Min(0) @Max(3_600_000)
  EVENT_LOOP_LOG_MS = 0;

  /** Set: Prometheus metrics of this instance at GET /metrics on a listener of their own, never the API port. Unset: off. */
  @Transform(toOptionalInt) @IsOptional() @IsInt() @Min(0) @Max(65535)
  METRICS_PORT?: number;

  /** Address of the metrics listener: loopback by default, as the metrics are for the operator's scraper only. */
  @IsString() @MinLength(1)
  METRICS_HOST = '127.0.0.1';
}

/** The exports an instance runs at once: EXPORT_MAX_CONCURRENT, or a third of the pool (3 of the default 10), at least one. */
export function exportMaxConcurrent(env: Env): number {
  return env.EXPORT_MAX_CONCURRENT ?? Math.max(1, Math.floor(env.DB_POOL_SIZE / 3));
}

/** FIRMWARE_REQUIRE_SIGNATURE, or its default: on outside development. */
export function firmwareSignatureRequired(env: Env): boolean {
  return env.FIRMWARE_REQUIRE_SIGNATURE ?? env.NODE_ENV !== 'development';
}

/** DATABASE_REPLICA_URLS as a list; empty without replicas. */
export function replicaUrls(env: Env): string[] {
  return (env.DATABASE_REPLICA_URLS ?? '').split(',').map((url) => url.trim()).filter(Boolean);
}

export class InvalidEnvironmentError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid environment: ${problems.join('; ')}`);
  }
}

/** Parses and validates the environment. Throws one error naming every bad variable. */
export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  const env = plainToInstance(Env, { ...source }, { exposeDefaultValues: true });
  const problems = validateSync(env, { forbidUnknownValues: false }).map(
    (error) => `${error.property}: ${Object.values(error.constraints ?? {}).join(', ')}`,
  );
  if (env.NODE_ENV === 'production') {
    for (const name of ['DEVICE_JWT_SECRET', 'CUSTOMER_JWT_SECRET', 'SECRET_PEPPER', 'DATABASE_URL'] as const) {
      if (!env[name]) problems.push(`${name}: required when NODE_ENV=production`);
    }
    if (env.WEBHOOK_ALLOW_PRIVATE_TARGETS) problems.push('WEBHOOK_ALLOW_PRIVATE_TARGETS: must not be true when NODE_ENV=production');
    const span = guaranteedRetrySpanSec({ delaySec: env.DELIVERY_RETRY_DELAY_SEC, delayMaxSec: env.DELIVERY_RETRY_DELAY_MAX_SEC, limit: env.DELIVERY_RETRY_LIMIT });
    if (span < MIN_DELIVERY_RETRY_SPAN_SEC) problems.push(`DELIVERY_RETRY_LIMIT, DELIVERY_RETRY_DELAY_SEC, DELIVERY_RETRY_DELAY_MAX_SEC: deliveries must be retried for at least 24 h in production (these give ${Math.floor(span / 3600)} h)`);
  }
  if (Boolean(env.ADMIN_EMAIL) !== Boolean(env.ADMIN_PASSWORD)) problems.push('ADMIN_EMAIL, ADMIN_PASSWORD: set both or neither');
  if (env.METRICS_PORT !== undefined && env.METRICS_PORT !== 0 && env.METRICS_PORT === env.PORT) problems.push('METRICS_PORT: must differ from PORT (metrics are never served on the API port)');
  if (env.EXPORT_MAX_CONCURRENT !== undefined && env.EXPORT_MAX_CONCURRENT >= env.DB_POOL_SIZE) problems.push('EXPORT_MAX_CONCURRENT: must be below DB_POOL_SIZE (each export holds a connection; the rest of the service needs at least one)');
  if (Boolean(env.TLS_CERT_FILE) !== Boolean(env.TLS_KEY_FILE)) problems.push('TLS_CERT_FILE, TLS_KEY_FILE: set both or neither');
  if (problems.length > 0) throw new InvalidEnvironmentError(problems);
  return env;
}
