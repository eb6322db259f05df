import type { DataSourceOptions } from 'typeorm';
import { EmailVerificationTokenRecord, UserRecord, UserRefreshTokenRecord } from '../../modules/accounts/infrastructure/user.record.js';
import { ClaimAuditRecord } from '../../modules/claims/infrastructure/claim-audit.record.js';
import { ConfigDefaultsRecord } from '../../modules/devices/infrastructure/config-defaults.record.js';
import { DeviceRecord, DeviceRefreshTokenRecord, RegistrationAllowlistRecord } from '../../modules/devices/infrastructure/device.record.js';
import { DeviceReleaseStateRecord } from '../../modules/ota/infrastructure/device-release-state.record.js';
import { FirmwareReleaseRecord } from '../../modules/ota/infrastructure/firmware-release.record.js';
import { OtaEventRecord } from '../../modules/ota/infrastructure/ota-event.record.js';
import {
  DeviceLatestMetricRecord,
  TelemetryReadingRecord,
  TelemetryRollup1dRecord,
  TelemetryRollup1hRecord,
  TelemetryRollup5mRecord,
  TelemetryRollup6hRecord,
} from '../../modules/telemetry/infrastructure/telemetry.record.js';
import { DeviceIdentity1763740000000 } from './migrations/1763740000000-device-identity.js';
import { AccountsAndClaims1763750000000 } from './migrations/1763750000000-accounts-and-claims.js';
import { Telemetry1763760000000 } from './migrations/1763760000000-telemetry.js';
import { ConfigAndOta1763770000000 } from './migrations/1763770000000-config-and-ota.js';
import { TelemetryRollupLevels1763780000000 } from './migrations/1763780000000-telemetry-rollup-levels.js';
import { TelemetryRollup6h1763790000000 } from './migrations/1763790000000-telemetry-rollup-6h.js';
import { RefreshTokenSessions1763800300000 } from './migrations/1763800300000-refresh-token-sessions.js';

/**
 * Every table the service owns, described exactly as the migrations build it: the schema-drift
 * test (test/e2e/schema-drift.e2e-spec.ts, `npm run schema:check`) keeps TypeORM's diff between the
 * two empty. What TypeORM cannot describe (partitioning, triggers, functions, an expression index)
 * is named on the record concerned and lives in the migrations only.
 */
export const ENTITIES = [
  DeviceRecord,
  DeviceRefreshTokenRecord,
  RegistrationAllowlistRecord,
  ConfigDefaultsRecord,
  UserRecord,
  EmailVerificationTokenRecord,
  UserRefreshTokenRecord,
  ClaimAuditRecord,
  TelemetryReadingRecord,
  TelemetryRollup5mRecord,
  TelemetryRollup1hRecord,
  TelemetryRollup6hRecord,
  TelemetryRollup1dRecord,
  DeviceLatestMetricRecord,
  FirmwareReleaseRecord,
  OtaEventRecord,
  DeviceReleaseStateRecord,
];
export const MIGRATIONS = [DeviceIdentity1763740000000, AccountsAndClaims1763750000000, Telemetry1763760000000, ConfigAndOta1763770000000, TelemetryRollupLevels1763780000000, TelemetryRollup6h1763790000000, RefreshTokenSessions1763800300000];

export interface DatabaseSettings {
  url: string;
  poolSize: number;
  /** Longest wait for a connection, a new one or one from the pool (DATABASE_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** Longest a statement may run; 0: no limit (DATABASE_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
}

/**
 * Named statements are planned once per connection and the plan is kept (PostgreSQL's default
 * re-plans a statement whenever a generic plan looks costlier, and for a partitioned table it
 * always does: the history query spent ~1.2 ms of its ~4.4 ms planning). Partitions are still
 * pruned at execution. Unnamed statements are planned for their values every time, as before.
 */
export const SESSION_OPTIONS = '-c plan_cache_mode=force_generic_plan';

export const DEFAULT_CONNECT_TIMEOUT_MS = 3000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5000;

/**
 * One place for how the service talks to PostgreSQL. Timeouts are bounded so that a database that
 * went away turns into a quick 503, never a hanging request.
 */
export function dataSourceOptions(settings: DatabaseSettings): DataSourceOptions {
  const connectTimeoutMs = settings.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const statementTimeoutMs = settings.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  return {
    type: 'postgres',
    url: settings.url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    migrationsRun: false,
    poolSize: settings.poolSize,
    connectTimeoutMS: connectTimeoutMs,
    applicationName: 'device-cloud',
    extra: {
      options: SESSION_OPTIONS,
      statement_timeout: statementTimeoutMs,
      // The server cancels a statement at statement_timeout; when it cannot even say so (the
      // network is gone), the driver gives up a little later and drops the connection.
      query_timeout: statementTimeoutMs > 0 ? statementTimeoutMs + connectTimeoutMs : undefined,
      idle_in_transaction_session_timeout: 30_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
    },
  };
}
