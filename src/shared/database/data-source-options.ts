import pg from 'pg';
import type { DataSourceOptions } from 'typeorm';
import type { ReplicaSettings } from './read-replicas.js';
import { DeviceIdentity1763740000000 } from './migrations/1763740000000-device-identity.js';
import { AccountsAndClaims1763750000000 } from './migrations/1763750000000-accounts-and-claims.js';
import { Telemetry1763760000000 } from './migrations/1763760000000-telemetry.js';
import { ConfigAndOta1763770000000 } from './migrations/1763770000000-config-and-ota.js';
import { TelemetryRollupLevels1763780000000 } from './migrations/1763780000000-telemetry-rollup-levels.js';
import { TelemetryRollup6h1763790000000 } from './migrations/1763790000000-telemetry-rollup-6h.js';
import { RefreshTokenSessions1763800300000 } from './migrations/1763800300000-refresh-token-sessions.js';
import { DeviceEvents1764000000000 } from './migrations/1764000000000-device-events.js';
import { Alerts1764000100000 } from './migrations/1764000100000-alerts.js';
import { Notifications1764000200000 } from './migrations/1764000200000-notifications.js';
import { LiveStream1764000300000 } from './migrations/1764000300000-live-stream.js';
import { CustomerSessionCache1764000400000 } from './migrations/1764000400000-customer-session-cache.js';
import { ApiKeys1764000600000 } from './migrations/1764000600000-api-keys.js';
import { DeviceLabels1764000700000 } from './migrations/1764000700000-device-labels.js';
import { PasswordReset1764000800000 } from './migrations/1764000800000-password-reset.js';
import { DeviceShares1764000900000 } from './migrations/1764000900000-device-shares.js';
import { AuditLog1764001000000 } from './migrations/1764001000000-audit-log.js';
import { BatteryEnergy1764001100000 } from './migrations/1764001100000-battery-energy.js';
import { OtaBatteryGuard1764001200000 } from './migrations/1764001200000-ota-battery-guard.js';
import { TableOwnerFunctions1764001300000 } from './migrations/1764001300000-table-owner-functions.js';
import { TableOwnersExports1764001400000 } from './migrations/1764001400000-table-owners-exports.js';
import { DeviceCommands1764001500000 } from './migrations/1764001500000-device-commands.js';
import { DeviceLogs1764001600000 } from './migrations/1764001600000-device-logs.js';
import { LogUploadSetting1764001700000 } from './migrations/1764001700000-log-upload-setting.js';
import { DeviceCrashes1764001800000 } from './migrations/1764001800000-device-crashes.js';
import { ReleaseHealth1764001900000 } from './migrations/1764001900000-release-health.js';
import { FirmwareSymbols1764002000000 } from './migrations/1764002000000-firmware-symbols.js';
import { FirmwareSigning1764002100000 } from './migrations/1764002100000-firmware-signing.js';
import { FirmwareImages1764002200000 } from './migrations/1764002200000-firmware-images.js';
import { FirmwareCampaigns1764002300000 } from './migrations/1764002300000-firmware-campaigns.js';
import { Organizations1764002400000 } from './migrations/1764002400000-organizations.js';
import { OrganizationIntegrations1764002600000 } from './migrations/1764002600000-organization-integrations.js';
import { TelemetryDays1764002700000 } from './migrations/1764002700000-telemetry-days.js';
import { TelemetryHours1764002800000 } from './migrations/1764002800000-telemetry-hours.js';

export const MIGRATIONS = [DeviceIdentity1763740000000, AccountsAndClaims1763750000000, Telemetry1763760000000, ConfigAndOta1763770000000, TelemetryRollupLevels1763780000000, TelemetryRollup6h1763790000000, RefreshTokenSessions1763800300000, DeviceEvents1764000000000, Alerts1764000100000, Notifications1764000200000, LiveStream1764000300000, CustomerSessionCache1764000400000, ApiKeys1764000600000, DeviceLabels1764000700000, PasswordReset1764000800000, DeviceShares1764000900000, AuditLog1764001000000, BatteryEnergy1764001100000, OtaBatteryGuard1764001200000, TableOwnerFunctions1764001300000, TableOwnersExports1764001400000, DeviceCommands1764001500000, DeviceLogs1764001600000, LogUploadSetting1764001700000, DeviceCrashes1764001800000, ReleaseHealth1764001900000, FirmwareSymbols1764002000000, FirmwareSigning1764002100000, FirmwareImages1764002200000, FirmwareCampaigns1764002300000, Organizations1764002400000, OrganizationIntegrations1764002600000, TelemetryDays1764002700000, TelemetryHours1764002800000];

export interface DatabaseSettings {
  url: string;
  poolSize: number;
  /** Longest wait for a connection, a new one or one from the pool (DATABASE_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** Longest a statement may run; 0: no limit (DATABASE_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /** Streaming replicas for reads that may be a little old (DATABASE_REPLICA_URLS); none by default. */
  replicas?: ReplicaSettings;
}

/**
 * Named statements are planned once per connection and the plan is kept (PostgreSQL's default
 * re-plans a statement whenever a generic plan looks costlier, and for a partitioned table it
 * always does: the history query spent ~1.2 ms of its ~4.4 ms planning). Partitions are still
 * pruned at execution. Unnamed statements are planned for their values every time, as before.
 */
export const SESSION_OPTIONS = '-c plan_cache_mode=force_generic_plan';

/**
 * pg's client, listening to its own 'error' events for its whole life. A session killed while the
 * client is checked out (pg-pool takes its idle listener off then), or after TypeORM let go of it,
 * emits 'error' on the client, and an 'error' nobody hears ends the process. The statement in
 * flight still fails with the same error and the pool still drops the broken client; the listener
 * only keeps the process up. Given to the pool from the start, it covers every client, the first
 * one TypeORM opens to check the pool among them.
 */
class ListeningClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 3000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5000;

/**
 * How the service talks to PostgreSQL, for the given entity records (the modules' tables, which
 * src/schema.ts assembles; running migrations needs none). Timeouts are bounded so that a database
 * that went away turns into a quick 503, never a hanging request.
 */
export function dataSourceOptions(settings: DatabaseSettings, entities: NonNullable<DataSourceOptions['entities']> = []): DataSourceOptions {
  return {
    type: 'postgres',
    url: settings.url,
    entities,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    migrationsRun: false,
    poolSize: settings.poolSize,
    connectTimeoutMS: settings.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    applicationName: APPLICATION_NAME,
    extra: sessionSettings(settings),
  };
}

const APPLICATION_NAME = 'device-cloud';

/** A pg pool with the same sessions as the one TypeORM opens from dataSourceOptions (a read replica's). */
export function poolConfig(settings: DatabaseSettings): pg.PoolConfig {
  return {
    connectionString: settings.url,
    connectionTimeoutMillis: settings.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    application_name: APPLICATION_NAME,
    max: settings.poolSize,
    ...sessionSettings(settings),
  };
}

function sessionSettings(settings: DatabaseSettings) {
  const connectTimeoutMs = settings.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const statementTimeoutMs = settings.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  return {
    Client: ListeningClient,
    options: SESSION_OPTIONS,
    statement_timeout: statementTimeoutMs,
    // The server cancels a statement at statement_timeout; when it cannot even say so (the
    // network is gone), the driver gives up a little later and drops the connection.
    query_timeout: statementTimeoutMs > 0 ? statementTimeoutMs + connectTimeoutMs : undefined,
    idle_in_transaction_session_timeout: 30_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
  };
}
