import type { DataSourceOptions } from 'typeorm';
import { ACCOUNTS_RECORDS } from './modules/accounts/index.js';
import { ALERTS_RECORDS } from './modules/alerts/index.js';
import { API_KEYS_RECORDS } from './modules/api-keys/index.js';
import { BATTERIES_RECORDS } from './modules/batteries/index.js';
import { AUDIT_RECORDS } from './modules/audit/index.js';
import { CLAIMS_RECORDS } from './modules/claims/index.js';
import { COMMANDS_RECORDS } from './modules/commands/index.js';
import { CRASHES_RECORDS } from './modules/crashes/index.js';
import { DEVICE_LOGS_RECORDS } from './modules/device-logs/index.js';
import { DEVICES_RECORDS } from './modules/devices/index.js';
import { EVENTS_RECORDS } from './modules/events/index.js';
import { NOTIFICATIONS_RECORDS } from './modules/notifications/index.js';
import { OTA_RECORDS } from './modules/ota/index.js';
import { ORGANIZATIONS_RECORDS } from './modules/organizations/index.js';
import { SHARING_RECORDS } from './modules/sharing/index.js';
import { STREAM_RECORDS } from './modules/stream/index.js';
import { TELEMETRY_RECORDS } from './modules/telemetry/index.js';
import { dataSourceOptions, MIGRATIONS, type DatabaseSettings } from './shared/database/data-source-options.js';

/**
 * Every table the service owns, described exactly as the migrations build it: the schema-drift
 * test (test/e2e/schema-drift.e2e-spec.ts, `npm run schema:check`) keeps TypeORM's diff between the
 * two empty. What TypeORM cannot describe (partitioning, triggers, functions, an expression index)
 * is named on the record concerned and lives in the migrations only. Each module lists its own.
 */
export const ENTITIES = [...DEVICES_RECORDS, ...ACCOUNTS_RECORDS, ...CLAIMS_RECORDS, ...TELEMETRY_RECORDS, ...OTA_RECORDS, ...EVENTS_RECORDS, ...ALERTS_RECORDS, ...NOTIFICATIONS_RECORDS, ...STREAM_RECORDS, ...API_KEYS_RECORDS, ...SHARING_RECORDS, ...AUDIT_RECORDS, ...BATTERIES_RECORDS, ...COMMANDS_RECORDS, ...DEVICE_LOGS_RECORDS, ...CRASHES_RECORDS, ...ORGANIZATIONS_RECORDS];

export { MIGRATIONS };

/** The service's data source: the connection settings with every module's records. */
export function serviceDataSourceOptions(settings: DatabaseSettings): DataSourceOptions {
  return dataSourceOptions(settings, ENTITIES);
}
