/**
 * The baseline: a minimal hand-written Fastify 5 + pg server doing exactly the service's work per
 * benchmarked request — same token checks (HS256, issuer, audience, typ at+jwt, token version read
 * from the database on every request), same body rules as a JSON schema, same SQL text and prepared
 * statement names (bench/baseline-sql.ts), same pool size, reply after the commit — and nothing
 * else: no Nest, no class-validator, no request logging, no request ids.
 *
 * Routes: POST /api/v1/telemetry, GET /api/v1/dashboard/devices/:deviceId/telemetry/history
 * (buckets; raw mode is not benchmarked and answers 400 here),
 * GET /api/v1/dashboard/devices/:deviceId/batteries/:batteryId/energy, POST /api/v1/device/login,
 * POST /api/v1/auth/login, GET /api/v1/device/config, GET /api/v1/ota/latest,
 * GET /api/v1/device/commands (short polls; no long poll), POST /api/v1/device/logs, GET /health.
 */
import { createHash, createHmac, createSecretKey, randomBytes, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import * as argon2 from 'argon2';
import Fastify, { type FastifyError, type FastifyRequest } from 'fastify';
import jwt, { type JwtPayload } from 'jsonwebtoken';
import pg from 'pg';
import { autoBucketSec, MAX_POINTS_EXPLICIT, parseBucket, resolveRange, rollupSpans } from '../src/modules/telemetry/domain/history-query.js';
import { bucketsOf } from '../src/modules/telemetry/domain/history-series.js';
import { type PackedSeriesParts, seriesParts } from '../src/modules/telemetry/infrastructure/packed-series-parts.js';
import { admit, BATTERY_ID_PATTERN, DEFAULT_BATTERY_ID, METRIC_NAME, parseIsoInstant, type TelemetryRecord } from '../src/modules/telemetry/domain/telemetry-record.js';
import { effectiveConfig, type ConfigOverrides, type FleetDefaults } from '../src/modules/devices/domain/device-config.js';
import { FirmwareVersion } from '../src/shared/kernel/firmware-version.js';
import { selectRelease, type FirmwareRelease } from '../src/modules/ota/domain/firmware-release.js';
import { DomainError } from '../src/shared/domain-error.js';
import { SESSION_OPTIONS } from '../src/shared/database/data-source-options.js';
import * as SQL from './baseline-sql.js';
import { ENERGY_BUCKETS, MAX_ENERGY_POINTS, type EnergyBucketName } from '../src/modules/batteries/domain/energy.js';
import type { EnergySumRow } from '../src/modules/batteries/infrastructure/sql-battery-energy.store.js';
import { parseInstant } from '../src/modules/telemetry/domain/history-query.js';
import { ARGON2_OPTIONS } from '../src/shared/crypto/secret-hasher.js';
import { strongTag } from '../src/shared/http/etag.js';
import { commandIdOf } from '../src/modules/commands/domain/device-command.js';
import {
  admitLines,
  checkMessages,
  LOG_LEVELS,
  MAX_BATCH_BYTES,
  MAX_LINES_PER_BATCH,
  MAX_MESSAGE_BYTES,
  MAX_TAG_LENGTH,
  utcDay,
  type LogLevel,
  type LogLine,
} from '../src/modules/device-logs/domain/device-log.js';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};

const config = {
  port: Number(env('PORT', '3191')),
  host: env('HOST', '127.0.0.1'),
  databaseUrl: env('DATABASE_URL'),
  poolSize: Number(env('DB_POOL_SIZE', '10')),
  deviceJwtSecret: env('DEVICE_JWT_SECRET'),
  customerJwtSecret: env('CUSTOMER_JWT_SECRET'),
  pepper: env('SECRET_PEPPER'),
  retentionDays: Number(env('TELEMETRY_RETENTION_DAYS', '365')),
  logRetentionDays: Number(env('LOG_RETENTION_DAYS', '14')),
  logBytesPerDevicePerDay: Number(env('LOG_BYTES_PER_DEVICE_PER_DAY', '1048576')),
  deviceTokenTtlSec: 3600,
  customerTokenTtlSec: 900,
  refreshTtlDays: 30,
};

// KeyObjects, as src/auth/access-token.ts hmacKey(): a string makes jsonwebtoken try a PEM parse first.
const deviceKey = createSecretKey(Buffer.from(config.deviceJwtSecret, 'utf8'));
const customerKey = createSecretKey(Buffer.from(config.customerJwtSecret, 'utf8'));

const ISSUER = 'device-cloud';
const ACCESS_TOKEN_TYPE = 'at+jwt';
const DEVICE_AUDIENCE = 'device-cloud:device';
const CUSTOMER_AUDIENCE = 'device-cloud:customer';
const DEVICE_ID = '^[A-Za-z0-9._:-]{1,64}$';
const NO_NUL = '^[^\\u0000]*$';

// The pool as TypeORM builds it from src/shared/database/data-source-options.ts (same session options: named statements keep one plan).
const pool = new pg.Pool({
  connectionString: config.databaseUrl,
  max: config.poolSize,
  connectionTimeoutMillis: 5000,
  application_name: 'bench-baseline',
  options: SESSION_OPTIONS,
  statement_timeout: 10_000,
  idle_in_transaction_session_timeout: 30_000,
  idleTimeoutMillis: 30_000,
});
pool.on('error', (error) => process.stderr.write(`pool error: ${error.message}\n`));

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

const unauthorized = () => new HttpError(401, 'UNAUTHORIZED');

interface DeviceRow {
  device_id: string;
  hardware_id: string;
  firmware_version: string;
  secret_hash: string;
  token_version: number;
  registered_at: Date;
  credentials_used_at: Date | null;
  config_overrides: ConfigOverrides;
  config_revision: number;
  config_updated_at: Date | null;
}

interface UserRow {
  id: string;
  password_hash: string;
  role: 'customer' | 'admin';
  token_version: number;
}

interface VisibilityRow {
  role: string | null;
  visible_since: Date | null;
}

interface SeriesRow {
  battery_id: string;
  metric: string;
  ts: number[];
  avg: number[];
  min: number[];
  max: number[];
  count: number[];
}

/** passport-jwt's fromAuthHeaderAsBearerToken, then jsonwebtoken with the service's options. */
function verifyAccessToken(request: FastifyRequest, secret: KeyObject, audience: string): { sub: string; tv: number; sid: unknown } {
  const match = /^(\S+)\s+(\S+)$/.exec(request.headers.authorization ?? '');
  if (!match || match[1].toLowerCase() !== 'bearer') throw unauthorized();
  let token: jwt.Jwt;
  try {
    token = jwt.verify(match[2], secret, { algorithms: ['HS256'], audience, issuer: ISSUER, clockTolerance: 5, complete: true });
  } catch {
    throw unauthorized();
  }
  const payload = token.payload as JwtPayload;
  if (token.header.typ !== ACCESS_TOKEN_TYPE || typeof payload.sub !== 'string' || typeof payload.tv !== 'number') throw unauthorized();
  if (typeof payload.exp !== 'number' || typeof payload.iat !== 'number' || payload.iat > Date.now() / 1000 + 5) throw unauthorized();
  return { sub: payload.sub, tv: payload.tv, sid: payload.sid };
}

/**
 * The service keeps device rows in memory and forgets them on change (DeviceSnapshots + ChangeFeed);
 * nothing changes a device during a bench run, so a plain map does the same work here.
 */
const deviceSnapshots = new Map<string, DeviceRow>();

async function authenticateDevice(request: FastifyRequest): Promise<string> {
  return (await deviceOf(request)).device_id;
}

async function deviceOf(request: FastifyRequest): Promise<DeviceRow> {
  const { sub, tv } = verifyAccessToken(request, deviceKey, DEVICE_AUDIENCE);
  let device = deviceSnapshots.get(sub);
  if (!device) {
    const { rows } = await pool.query<DeviceRow>({ name: SQL.DEVICE_BY_ID_NAME, text: SQL.DEVICE_BY_ID_SQL, values: [sub] });
    device = rows[0];
    if (!device || device.token_version !== tv) throw unauthorized();
    if (!device.credentials_used_at) {
      await pool.query({ name: SQL.MARK_CREDENTIALS_USED_NAME, text: SQL.MARK_CREDENTIALS_USED_SQL, values: [sub, new Date()] });
      device = { ...device, credentials_used_at: new Date() };
    }
    deviceSnapshots.set(sub, device);
  }
  if (device.token_version !== tv) throw unauthorized();
  return device;
}

async function authenticateCustomer(request: FastifyRequest): Promise<{ userId: string; isAdmin: boolean }> {
  const { sub, tv, sid } = verifyAccessToken(request, customerKey, CUSTOMER_AUDIENCE);
  if (typeof sid !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(sid)) throw unauthorized();
  const { rows } = await pool.query<UserRow>({ name: SQL.USER_IN_SESSION_NAME, text: SQL.USER_IN_SESSION_SQL, values: [sub, sid] });
  const user = rows[0];
  if (!user || user.token_version !== tv) throw unauthorized();
  return { userId: user.id, isAdmin: user.role === 'admin' };
}

const hmac = (value: string) => createHmac('sha256', config.pepper).update(value, 'utf8').digest('hex');

function hmacMatches(value: string, stored: string | undefined): boolean {
  const presented = Buffer.from(hmac(value), 'hex');
  const expected = Buffer.from(stored ?? '', 'hex');
  if (expected.length !== presented.length) {
    timingSafeEqual(presented, presented);
    return false;
  }
  return timingSafeEqual(presented, expected);
}

/** At most two argon2 operations at once, as in src/shared/crypto/secret-hasher.ts. */
let argonActive = 0;
const argonWaiting: Array<() => void> = [];
async function withArgonSlot<T>(work: () => Promise<T>): Promise<T> {
  if (argonActive >= 2) await new Promise<void>((resolve) => argonWaiting.push(resolve));
  argonActive += 1;
  try {
    return await work();
  } finally {
    argonActive -= 1;
    argonWaiting.shift()?.();
  }
}
const dummyPasswordHash = argon2.hash(randomBytes(16).toString('hex'), ARGON2_OPTIONS);

async function issueTokens(kind: 'device' | 'customer', subject: string, tokenVersion: number, extraClaims: Record<string, unknown>, now: Date) {
  const device = kind === 'device';
  const expiresIn = device ? config.deviceTokenTtlSec : config.customerTokenTtlSec;
  const familyId = randomUUID();
  const claims = device ? { sub: subject, tv: tokenVersion, ...extraClaims } : { sub: subject, tv: tokenVersion, sid: familyId, ...extraClaims };
  const accessToken = jwt.sign(claims, device ? deviceKey : customerKey, {
    audience: device ? DEVICE_AUDIENCE : CUSTOMER_AUDIENCE,
    issuer: ISSUER,
    expiresIn,
    algorithm: 'HS256',
    header: { alg: 'HS256', typ: ACCESS_TOKEN_TYPE },
  });
  const refreshToken = (device ? 'dcr_' : 'ucr_') + randomBytes(32).toString('base64url');
  await pool.query(device ? SQL.INSERT_DEVICE_REFRESH_TOKEN_SQL : SQL.INSERT_USER_REFRESH_TOKEN_SQL, [
    subject,
    tokenVersion,
    familyId,
    hmac(refreshToken),
    now,
    new Date(now.getTime() + config.refreshTtlDays * 86_400_000),
  ]);
  return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn };
}

const app = Fastify({
  logger: false,
  bodyLimit: 256 * 1024,
  keepAliveTimeout: 10_000,
  requestTimeout: 30_000,
  connectionTimeout: 30_000,
  forceCloseConnections: 'idle',
  return503OnClosing: true,
  onProtoPoisoning: 'error',
  onConstructorPoisoning: 'error',
  // Unknown properties are refused (the service's forbidNonWhitelisted), never silently dropped or coerced.
  ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } },
});

app.setErrorHandler((error: FastifyError | HttpError | DomainError, _request, reply) => {
  const status = error instanceof HttpError ? error.status : error instanceof DomainError ? 400 : 'validation' in error && error.validation ? 400 : (error as FastifyError).statusCode ?? 500;
  if (status >= 500) process.stderr.write(`baseline error: ${error.stack ?? error.message}\n`);
  void reply.status(status).type('application/problem+json').send({ status, code: error instanceof HttpError || error instanceof DomainError ? error.code : 'ERROR' });
});

interface IngestBody {
  records: Array<{ ts: string; batteryId?: string; metrics: Record<string, number> }>;
}

app.post<{ Body: IngestBody }>(
  '/api/v1/telemetry',
  {
    bodyLimit: 1024 * 1024,
    // Auth before validation, as the service's guard runs before its validation pipe.
    preValidation: async (request) => {
      (request as FastifyRequest & { deviceId?: string }).deviceId = await authenticateDevice(request);
    },
    schema: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['records'],
        properties: {
          records: {
            type: 'array',
            minItems: 1,
            maxItems: 500,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['ts', 'metrics'],
              properties: {
                // Whether ts names a real instant is checked in the handler, with the service's parseIsoInstant.
                ts: { type: 'string', maxLength: 40 },
                batteryId: { type: 'string', pattern: BATTERY_ID_PATTERN.source },
                metrics: {
                  type: 'object',
                  minProperties: 1,
                  maxProperties: 64,
                  propertyNames: { pattern: METRIC_NAME.source },
                  additionalProperties: { type: 'number' },
                },
              },
            },
          },
        },
      },
    },
  },
  async (request) => {
    const deviceId = (request as FastifyRequest & { deviceId: string }).deviceId;
    const now = new Date();
    const records: TelemetryRecord[] = request.body.records.map((record) => {
      const ts = parseIsoInstant(record.ts);
      if (!ts) throw new HttpError(400, 'VALIDATION_FAILED');
      return { ts, batteryId: record.batteryId ?? DEFAULT_BATTERY_ID, metrics: record.metrics };
    });
    const { accepted, rejected } = admit(records, now, config.retentionDays);
    let inserted = 0;
    if (accepted.length > 0) {
      const { rows } = await pool.query<{ device_id: string; battery_id: string | null }>({
        name: SQL.INGEST_NAME,
        text: SQL.INGEST_SQL,
        values: [accepted.map(() => deviceId), accepted.map((r) => r.batteryId), accepted.map((r) => r.ts), accepted.map((r) => JSON.stringify(r.metrics)), now],
      });
      // A row without a battery: the device is still marked offline.
      const offline = rows.filter((row) => row.battery_id === null).map((row) => row.device_id);
      if (offline.length > 0) await pool.query(SQL.BACK_ONLINE_SQL, [offline, now]);
      inserted = rows.length - offline.length;
    }
    return { accepted: inserted, duplicates: accepted.length - inserted, rejected };
  },
);

type Viewer = { userId: string; isAdmin: boolean };

/** The dashboard routes' hook: the customer guard's work, its viewer kept on the request. */
async function withViewer(request: FastifyRequest): Promise<void> {
  (request as FastifyRequest & { viewer?: Viewer }).viewer = await authenticateCustomer(request);
}

const viewerOf = (request: FastifyRequest): Viewer => (request as FastifyRequest & { viewer: Viewer }).viewer;

/** The range every dashboard read takes. */
const RANGE_QUERY = { from: { type: 'string', maxLength: 40, pattern: NO_NUL }, to: { type: 'string', maxLength: 40, pattern: NO_NUL } } as const;

interface HistoryQuery {
  from?: string;
  to?: string;
  metrics?: string;
  batteryId?: string;
  bucket?: string;
  limit?: string;
  cursor?: string;
}

function parseMetrics(raw: string): string[] {
  const names = raw.split(',').map((name) => name.trim()).filter(Boolean);
  if (names.length === 0 || names.length > 64 || names.some((name) => !METRIC_NAME.test(name))) throw new HttpError(400, 'VALIDATION_FAILED');
  return names;
}

app.get<{ Params: { deviceId: string }; Querystring: HistoryQuery }>(
  '/api/v1/dashboard/devices/:deviceId/telemetry/history',
  {
    preValidation: withViewer,
    schema: {
      params: { type: 'object', properties: { deviceId: { type: 'string', pattern: DEVICE_ID } } },
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...RANGE_QUERY,
          metrics: { type: 'string', maxLength: 2700, pattern: NO_NUL },
          batteryId: { type: 'string', maxLength: 64, pattern: NO_NUL },
          bucket: { type: 'string', maxLength: 12, pattern: NO_NUL },
          limit: { type: 'string', pattern: '^(1000|[1-9][0-9]{0,2})$' },
          cursor: { type: 'string', maxLength: 200, pattern: NO_NUL },
        },
      },
    },
  },
  async (request) => {
    const viewer = viewerOf(request);
    const { deviceId } = request.params;
    const query = request.query;
    const range = resolveRange(query.from, query.to, new Date());
    const bucket = parseBucket(query.bucket);
    const metrics = query.metrics === undefined ? null : parseMetrics(query.metrics);
    if (query.batteryId !== undefined && !BATTERY_ID_PATTERN.test(query.batteryId)) throw new HttpError(400, 'VALIDATION_FAILED');
    const { rows: devices } = await pool.query<VisibilityRow>({ name: SQL.DEVICE_VISIBILITY_NAME, text: SQL.DEVICE_VISIBILITY_SQL, values: [deviceId, viewer.isAdmin, viewer.userId] });
    const device = devices[0];
    if (!device?.role) throw new HttpError(404, 'NOT_FOUND');
    const visibleFrom = !viewer.isAdmin && device.visible_since && device.visible_since > range.from ? device.visible_since : range.from;
    const effective = { from: visibleFrom < range.to ? visibleFrom : range.to, to: range.to };
    if (bucket.kind === 'raw') throw new HttpError(400, 'RAW_NOT_IN_BASELINE');
    const bucketSec = bucket.kind === 'auto' ? autoBucketSec(range.from.getTime(), range.to.getTime()) : bucket.seconds;
    if ((range.to.getTime() - range.from.getTime()) / 1000 / bucketSec > MAX_POINTS_EXPLICIT) throw new HttpError(400, 'VALIDATION_FAILED');
    let rows: SeriesRow[] = [];
    if (effective.from < effective.to) {
      const [fiveMinutes, hours, sixHours, days] = rollupSpans(effective, bucketSec);
      const parts = (
        await pool.query<PackedSeriesParts>({
          name: SQL.SERIES_NAME,
          text: SQL.SERIES_SQL,
          values: [
            deviceId,
            effective.from,
            effective.to,
            fiveMinutes.from,
            fiveMinutes.to,
            hours.from,
            hours.to,
            sixHours.from,
            sixHours.to,
            days.from,
            days.to,
            metrics,
            query.batteryId ?? null,
          ],
        })
      ).rows;
      rows = parts.map((series) => bucketsOf(seriesParts(series), bucketSec));
    }
    const series = rows.map((row) => ({
      metric: row.metric,
      batteryId: row.battery_id,
      points: row.ts
        .map((_, i) => i)
        .sort((a, b) => row.ts[a] - row.ts[b])
        .map((i) => ({ ts: new Date(row.ts[i] * 1000).toISOString(), avg: row.avg[i], min: row.min[i], max: row.max[i], count: row.count[i] })),
    }));
    return { deviceId, from: range.from.toISOString(), to: range.to.toISOString(), bucketSec, series, nextCursor: null };
  },
);

app.post<{ Body: { deviceId: string; deviceSecret: string } }>(
  '/api/v1/device/login',
  {
    schema: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['deviceId', 'deviceSecret'],
        properties: { deviceId: { type: 'string', pattern: DEVICE_ID }, deviceSecret: { type: 'string', minLength: 1, maxLength: 128, pattern: NO_NUL } },
      },
    },
  },
  async (request) => {
    const { deviceId, deviceSecret } = request.body;
    const { rows } = await pool.query<DeviceRow>({ name: SQL.DEVICE_BY_ID_NAME, text: SQL.DEVICE_BY_ID_SQL, values: [deviceId] });
    const device = rows[0];
    const secretMatches = hmacMatches(deviceSecret, device?.secret_hash);
    if (!device || !secretMatches) throw new HttpError(401, 'INVALID_CREDENTIALS');
    const now = new Date();
    if (!device.credentials_used_at) await pool.query(SQL.MARK_CREDENTIALS_USED_SQL, [deviceId, now]);
    return issueTokens('device', device.device_id, device.token_version, {}, now);
  },
);

app.post<{ Body: { email: string; password: string } }>(
  '/api/v1/auth/login',
  {
    schema: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['email', 'password'],
        properties: { email: { type: 'string', minLength: 1, maxLength: 254, pattern: NO_NUL }, password: { type: 'string', minLength: 1, maxLength: 128, pattern: NO_NUL } },
      },
    },
  },
  async (request) => {
    const email = request.body.email.trim().toLowerCase();
    const { rows } = await pool.query<UserRow>(SQL.USER_BY_EMAIL_SQL, [email]);
    const user = rows[0];
    const dummy = await dummyPasswordHash;
    const passwordMatches = await withArgonSlot(async () => (await argon2.verify(user?.password_hash ?? dummy, request.body.password).catch(() => false)) && Boolean(user));
    if (!user || !passwordMatches) throw new HttpError(401, 'INVALID_CREDENTIALS');
    return issueTokens('customer', user.id, user.token_version, { role: user.role }, new Date());
  },
);

// S4: configuration and OTA polls. Fleet defaults and offerable releases are read once and kept,
// as the service mirrors them (nothing changes them during a bench run).
let fleetDefaults: Promise<FleetDefaults> | undefined;
let offerableReleases: Promise<FirmwareRelease[]> | undefined;
const recordedOffers = new Set<string>();

function loadDefaults(): Promise<FleetDefaults> {
  fleetDefaults ??= pool
    .query<{ settings: FleetDefaults['settings']; revision: number; updated_at: Date }>({ name: SQL.CONFIG_DEFAULTS_NAME, text: SQL.CONFIG_DEFAULTS_SQL })
    .then(({ rows }) => ({ settings: rows[0].settings, revision: rows[0].revision, updatedAt: rows[0].updated_at }));
  return fleetDefaults;
}

function loadReleases(): Promise<FirmwareRelease[]> {
  offerableReleases ??= pool.query<Record<string, never>>({ name: SQL.OFFERABLE_RELEASES_NAME, text: SQL.OFFERABLE_RELEASES_SQL }).then(({ rows }) =>
    rows.map((row: Record<string, unknown>) => ({
      id: row.id as string,
      version: row.version as string,
      hardwareId: row.hardware_id as string | null,
      channel: row.channel as 'stable' | 'beta',
      url: row.url as string,
      sha256: row.sha256 as string,
      size: Number(row.size),
      releaseNotes: row.release_notes as string | null,
      rolloutPercent: row.rollout_percent as number,
      minFromVersion: row.min_from_version as string | null,
      maxFailurePercent: row.max_failure_percent as number | null,
      minCrashFreePercent: row.min_crash_free_percent as number | null,
      paused: row.paused as boolean,
      autoPausedAt: row.auto_paused_at as Date | null,
      revoked: row.revoked as boolean,
      awaitingImage: false,
      publishedAt: row.published_at as Date,
      updatedAt: row.updated_at as Date,
      signed:
        row.signing_key_id === null ? null : { keyId: row.signing_key_id as string, signature: (row.signature as Buffer).toString('base64'), manifest: row.manifest as string },
      targetTags: row.target_tags as string[] | null,
      targetDeviceIds: row.target_device_ids as string[] | null,
      startsAt: row.starts_at as Date | null,
      rollbackTo: row.rollback_to as string | null,
    })),
  );
  return offerableReleases;
}

const noneMatch = (header: string | undefined, etag: string) => header !== undefined && header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);

app.get('/api/v1/device/config', async (request, reply) => {
  const device = await deviceOf(request);
  const config = effectiveConfig(await loadDefaults(), { overrides: device.config_overrides, revision: device.config_revision, updatedAt: device.config_updated_at }, device.registered_at);
  const etag = `"config-${config.version}"`;
  void reply.header('ETag', etag).header('Cache-Control', 'private, no-cache');
  if (noneMatch(request.headers['if-none-match'], etag)) return reply.status(304).send();
  return { ...config, updatedAt: config.updatedAt.toISOString() };
});

const batteryReadings = new Map<string, { rows: Array<{ metric: string; value: number }>; at: number }>();

app.get('/api/v1/ota/latest', async (request, reply) => {
  const device = await deviceOf(request);
  const config = effectiveConfig(await loadDefaults(), { overrides: device.config_overrides, revision: device.config_revision, updatedAt: device.config_updated_at }, device.registered_at);
  const firmwareVersion = FirmwareVersion.parse(device.firmware_version);
  const candidate = selectRelease(await loadReleases(), {
    deviceId: device.device_id,
    hardwareId: device.hardware_id,
    firmwareVersion,
    channel: config.otaChannel,
    minSoc: config.otaMinSoc,
    temperatureRange: config.otaTemperatureRange,
    // The bench's release targets no tags: the baseline reads none.
    tags: [],
  }, new Date());
  let reason: string | null = null;
  if (candidate) {
    // Remembered a minute per device, as the service does (src/modules/ota/infrastructure/sql-battery-readings.queries.ts).
    let remembered = batteryReadings.get(device.device_id);
    if (!remembered || Date.now() - remembered.at >= 60_000) {
      const { rows } = await pool.query<{ metric: string; value: number }>({
        name: 'baseline_battery_readings',
        text: "SELECT metric, value FROM device_latest_metrics WHERE device_id = $1 AND metric IN ('soc', 'temperature')",
        values: [device.device_id],
      });
      remembered = { rows, at: Date.now() };
      batteryReadings.set(device.device_id, remembered);
    }
    const socs = remembered.rows.filter((row) => row.metric === 'soc').map((row) => row.value);
    const temperatures = remembered.rows.filter((row) => row.metric === 'temperature').map((row) => row.value);
    const range = config.otaTemperatureRange;
    reason = socs.some((soc) => soc < config.otaMinSoc) ? 'LOW_SOC' : temperatures.some((t) => t < range.min || t > range.max) ? 'TEMPERATURE' : null;
  }
  const release = reason ? null : candidate;
  const etag = `"ota-${createHash('sha256').update(`${firmwareVersion.value}|${candidate?.id ?? '-'}|${reason ?? '-'}`).digest('base64url').slice(0, 22)}"`;
  void reply.header('ETag', etag).header('Cache-Control', 'private, no-cache');
  if (noneMatch(request.headers['if-none-match'], etag)) return reply.status(304).send();
  if (release && !recordedOffers.has(`${release.id}:${device.device_id}`)) {
    await pool.query({ name: SQL.RECORD_OFFER_NAME, text: SQL.RECORD_OFFER_SQL, values: [device.device_id, release.id, new Date()] });
    recordedOffers.add(`${release.id}:${device.device_id}`);
  }
  return {
    updateAvailable: release !== null,
    currentVersion: firmwareVersion.value,
    firmware: release
      ? {
          version: release.version,
          url: release.url,
          sha256: release.sha256,
          size: release.size,
          releaseNotes: release.releaseNotes,
          publishedAt: release.publishedAt.toISOString(),
          manifest: release.signed?.manifest ?? null,
          signature: release.signed?.signature ?? null,
          signingKeyId: release.signed?.keyId ?? null,
          rollback: FirmwareVersion.parse(release.version).compareTo(firmwareVersion) < 0,
        }
      : null,
    ...(reason ? { heldBack: { reason } } : {}),
  };
});

const HOUR_MS = 3_600_000;

/**
 * As BatteryEnergy.buckets() when the range has no marked hours, the case S7 is made of (its range
 * ends before the hours S1 and S2 ingest into). A range with marks is answered 503 here, not
 * recomputed: the report would count it as non-2xx.
 */
async function energySums(deviceId: string, batteryId: string, from: Date, to: Date, bucketSec: number): Promise<EnergySumRow[]> {
  const { rows: marks } = await pool.query<{ stale: boolean }>({ name: SQL.ENERGY_HAS_STALE_NAME, text: SQL.ENERGY_HAS_STALE_SQL, values: [deviceId, batteryId, from, to] });
  if (marks[0].stale) throw new HttpError(503, 'STALE_NOT_IN_BASELINE');
  const { rows } = await pool.query<EnergySumRow>({ name: SQL.ENERGY_SUMS_NAME, text: SQL.ENERGY_SUMS_SQL, values: [deviceId, batteryId, from, to, bucketSec] });
  return rows;
}

app.get<{ Params: { deviceId: string; batteryId: string }; Querystring: { from?: string; to?: string; bucket?: string } }>(
  '/api/v1/dashboard/devices/:deviceId/batteries/:batteryId/energy',
  {
    preValidation: withViewer,
    schema: {
      params: { type: 'object', properties: { deviceId: { type: 'string', pattern: DEVICE_ID }, batteryId: { type: 'string', pattern: BATTERY_ID_PATTERN.source } } },
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...RANGE_QUERY,
          bucket: { type: 'string', maxLength: 12, pattern: NO_NUL },
        },
      },
    },
  },
  async (request) => {
    const viewer = viewerOf(request);
    const { deviceId, batteryId } = request.params;
    const bucketSeconds: number | undefined = ENERGY_BUCKETS[(request.query.bucket ?? '1d') as EnergyBucketName];
    if (bucketSeconds === undefined) throw new HttpError(400, 'VALIDATION_FAILED');
    const bucketMs = bucketSeconds * 1000;
    const to = request.query.to === undefined ? new Date() : parseInstant(request.query.to, 'to');
    const from = request.query.from === undefined ? new Date(to.getTime() - 30 * 86_400_000) : parseInstant(request.query.from, 'from');
    if (from >= to) throw new HttpError(400, 'VALIDATION_FAILED');
    const start = Math.floor(from.getTime() / bucketMs) * bucketMs;
    const end = Math.ceil(to.getTime() / bucketMs) * bucketMs;
    if ((end - start) / bucketMs > MAX_ENERGY_POINTS) throw new HttpError(400, 'VALIDATION_FAILED');
    const { rows: devices } = await pool.query<VisibilityRow>({ name: SQL.DEVICE_VISIBILITY_NAME, text: SQL.DEVICE_VISIBILITY_SQL, values: [deviceId, viewer.isAdmin, viewer.userId] });
    const device = devices[0];
    if (!device?.role) throw new HttpError(404, 'NOT_FOUND');
    const visibleFrom = device.role !== 'admin' && device.visible_since ? Math.floor(device.visible_since.getTime() / HOUR_MS) * HOUR_MS : 0;
    const [sums, profiles] = await Promise.all([
      energySums(deviceId, batteryId, new Date(Math.max(start, visibleFrom)), new Date(end), bucketSeconds),
      pool.query<{ capacity_ah: number }>({ name: SQL.BATTERY_PROFILE_NAME, text: SQL.BATTERY_PROFILE_SQL, values: [deviceId, batteryId] }),
    ]);
    const capacityAh = profiles.rows[0]?.capacity_ah;
    const byStart = new Map(sums.map((sum) => [sum.start.getTime(), sum]));
    const points = [];
    for (let at = start; at < end; at += bucketMs) {
      const sum = byStart.get(at);
      const dischargedAh = sum?.discharged_ah ?? 0;
      points.push({
        ts: new Date(at).toISOString(),
        chargedAh: sum?.charged_ah ?? 0,
        dischargedAh,
        chargedWh: sum?.charged_wh ?? 0,
        dischargedWh: sum?.discharged_wh ?? 0,
        equivalentFullCycles: capacityAh === undefined ? null : dischargedAh / capacityAh,
        coverage: Number(sum?.covered_ms ?? 0) / bucketMs,
      });
    }
    return { batteryId, bucketSeconds, points };
  },
);

// S8: command polls. A device's pending commands are read once and kept, as the service mirrors
// them until the change feed says they changed: nothing sends a command to the fleet S8 polls with.
interface PendingCommandRow {
  command_id: string;
  type: string;
  params: Record<string, unknown>;
  created_at: Date;
  expires_at: Date;
}

const pendingCommands = new Map<string, Promise<PendingCommandRow[]>>();

function pendingOf(deviceId: string): Promise<PendingCommandRow[]> {
  let rows = pendingCommands.get(deviceId);
  if (!rows) {
    rows = pool.query<PendingCommandRow>({ name: SQL.COMMAND_PENDING_NAME, text: SQL.COMMAND_PENDING_SQL, values: [deviceId, new Date()] }).then(({ rows }) => rows);
    rows.catch(() => pendingCommands.delete(deviceId));
    pendingCommands.set(deviceId, rows);
  }
  return rows;
}

app.get<{ Querystring: Record<string, string> }>('/api/v1/device/commands', async (request, reply) => {
  const device = await deviceOf(request);
  if (Object.hasOwn(request.query, 'waitSec')) throw new HttpError(400, 'LONG_POLL_NOT_IN_BASELINE');
  const now = Date.now();
  const commands = (await pendingOf(device.device_id)).filter((row) => row.expires_at.getTime() > now);
  // src/modules/commands/application/gateway-commands.service.ts, commandsTag().
  const etag = strongTag(`commands-${commands.map((row) => commandIdOf(row.command_id)).join('.')}`);
  void reply.header('ETag', etag).header('Cache-Control', 'private, no-cache');
  if (noneMatch(request.headers['if-none-match'], etag)) return reply.status(304).send();
  // The service then counts a delivery of each command it hands out; the fleet has none to hand out.
  if (commands.length > 0) throw new HttpError(503, 'DELIVERY_NOT_IN_BASELINE');
  return { commands: [] };
});

// S10: log uploads, stored as SqlDeviceLogStore.store() does: one transaction that takes the
// device's usage row for the day, inserts the lines (ON CONFLICT DO NOTHING; the keys of those
// inserted and the device's owner come back) and adds their bytes.

/** src/modules/device-logs/infrastructure/sql-device-log.store.ts, lineHashOf(): 64 bits of SHA-256 over level, tag and message. */
const lineHashOf = (line: LogLine): string =>
  createHash('sha256').update(`${line.level}\u0000${line.tag ?? ''}\u0000${line.message}`).digest().readBigInt64BE(0).toString();

/** As the service's Sql.transaction(): BEGIN, the work, COMMIT (ROLLBACK on an error), on one pooled connection. */
async function inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => (broken = true));
    throw error;
  } finally {
    client.release(broken);
  }
}

interface LogBody {
  lines: Array<{ ts: string; level: LogLevel; tag?: string; message: string }>;
}

app.post<{ Body: LogBody }>(
  '/api/v1/device/logs',
  {
    bodyLimit: MAX_BATCH_BYTES,
    preValidation: async (request) => {
      (request as FastifyRequest & { deviceId?: string }).deviceId = await authenticateDevice(request);
    },
    schema: {
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['lines'],
        properties: {
          lines: {
            type: 'array',
            minItems: 1,
            maxItems: MAX_LINES_PER_BATCH,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['ts', 'level', 'message'],
              properties: {
                // Whether ts names a real instant is checked in the handler, with the service's parseIsoInstant.
                ts: { type: 'string', maxLength: 40 },
                level: { enum: [...LOG_LEVELS] },
                tag: { type: 'string', minLength: 1, maxLength: MAX_TAG_LENGTH },
                message: { type: 'string', maxLength: MAX_MESSAGE_BYTES },
              },
            },
          },
        },
      },
    },
  },
  async (request) => {
    const deviceId = (request as FastifyRequest & { deviceId: string }).deviceId;
    const lines: LogLine[] = request.body.lines.map((line) => {
      const ts = parseIsoInstant(line.ts);
      if (!ts) throw new HttpError(400, 'VALIDATION_FAILED');
      return { ts, level: line.level, tag: line.tag ?? null, message: line.message };
    });
    checkMessages(lines);
    const now = new Date();
    const { admitted, rejected } = admitLines(lines, now, config.logRetentionDays);
    if (admitted.length === 0) return { accepted: 0, duplicates: 0, rejected };
    const day = utcDay(now);
    const stored = await inTransaction(async (client) => {
      const { rows: usage } = await client.query<{ bytes: string }>({ name: SQL.LOG_USAGE_TAKE_NAME, text: SQL.LOG_USAGE_TAKE_SQL, values: [[deviceId], [day]] });
      if (Number(usage[0].bytes) >= config.logBytesPerDevicePerDay) return null;
      const hashes = admitted.map(lineHashOf);
      const { rows: inserted } = await client.query<{ keys: string }>({
        name: SQL.LOG_INSERT_NAME,
        text: SQL.LOG_INSERT_SQL,
        values: [admitted.map(() => deviceId), admitted.map((line) => line.ts.toISOString()), hashes, admitted.map((line) => line.level), admitted.map((line) => line.tag), admitted.map((line) => line.message), now],
      });
      // The lines inserted, as the service picks them to hand to the live stream (which, with no stream open, takes nothing).
      const keys = new Set(inserted[0]?.keys.split(',') ?? []);
      const storedLines = admitted.filter((line, index) => keys.delete(`${line.ts.getTime()}:${hashes[index]}`));
      const bytes = storedLines.reduce((sum, line) => sum + Buffer.byteLength(line.message) + (line.tag === null ? 0 : Buffer.byteLength(line.tag)), 0);
      if (bytes > 0) await client.query({ name: SQL.LOG_USAGE_ADD_NAME, text: SQL.LOG_USAGE_ADD_SQL, values: [[deviceId], [day], [bytes]] });
      return storedLines.length;
    });
    if (stored === null) throw new HttpError(429, 'LOG_QUOTA_EXCEEDED');
    return { accepted: stored, duplicates: admitted.length - stored, rejected };
  },
);

app.get('/health', async () => ({ status: 'ok' }));

async function shutdown(): Promise<void> {
  await app.close();
  await pool.end();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown());
process.on('SIGINT', () => void shutdown());

await app.listen({ port: config.port, host: config.host });
process.stdout.write(`baseline listening on http://${config.host}:${config.port}\n`);
