import 'reflect-metadata';
import { ChangeFeed } from '../src/shared/database/change-feed.js';
import { SqlDashboardQueries } from '../src/modules/dashboard/infrastructure/sql-dashboard-queries.js';
import { DeviceAccess } from '../src/modules/sharing/index.js';
import { SqlDeviceGrantQueries } from '../src/modules/sharing/infrastructure/sql-device-grant.queries.js';
import { SqlSessionUsers } from '../src/modules/accounts/infrastructure/sql-session-users.js';
import { SqlBatteryEnergyStore } from '../src/modules/batteries/infrastructure/sql-battery-energy.store.js';
import { SqlBatteryProfilesStore } from '../src/modules/batteries/infrastructure/sql-battery-profiles.store.js';
import { SqlCommandStore } from '../src/modules/commands/infrastructure/sql-command.store.js';
import { lineHashOf, SqlDeviceLogStore } from '../src/modules/device-logs/infrastructure/sql-device-log.store.js';
import { SqlReleaseOfferStore } from '../src/modules/ota/infrastructure/sql-release-offer.store.js';
import { Env } from '../src/config/env.js';
import { HistoryChunkCache } from '../src/modules/telemetry/infrastructure/history-chunk-cache.js';
import { SqlTelemetryHistoryQueries } from '../src/modules/telemetry/infrastructure/sql-telemetry-history.queries.js';
import { TelemetryFeed } from '../src/modules/telemetry/application/telemetry-feed.js';
import { UnmeasuredIngest } from '../src/modules/telemetry/application/ingest-metrics.js';
import { SqlTelemetryRecordStore } from '../src/modules/telemetry/infrastructure/sql-telemetry-record.store.js';
import { DeviceReturns } from '../src/modules/telemetry/domain/device-returns.js';
import type { ReplicaSql } from '../src/shared/database/replica-sql.js';
import type { Sql, SqlRunner } from '../src/shared/database/sql.js';
import * as baseline from './baseline-sql.js';

/** The one log line and record the parity check stores: the capture answers them as inserted (the log line's usage is added then). */
const PARITY_NOW = new Date('2026-01-01T12:00:00.000Z');
const PARITY_LINE = { ts: PARITY_NOW, level: 'info', tag: 'app', message: 'm' } as const;

interface Captured {
  text: string;
  name: string | undefined;
}

/** Stands in for the service's Sql and records what it is asked to run, in a transaction too. */
class CapturingSql implements SqlRunner {
  readonly calls: Captured[] = [];

  async rows<T>(text: string, _values: unknown[] = [], name?: string): Promise<T[]> {
    this.calls.push({ text, name });
    // The ingest statement stores its one record, so the store asks nothing more (a record not new would be compared with the stored one).
    if (name === 'telemetry_ingest') return [{ device_id: 'd', battery_id: 'main', ts: PARITY_NOW, owner_id: null, previous_newest_ts: null, offline_since: null }] as T[];
    // The log store's statements: a day's usage under the quota, then one line stored (so the usage is added).
    if (name === 'log-usage-take') return [{ device_id: 'd', day: '2026-01-01', bytes: '0' }] as T[];
    if (name === 'log-insert') return [{ device_id: 'd', keys: `${PARITY_NOW.getTime()}:${lineHashOf(PARITY_LINE)}`, owner_id: null }] as T[];
    return [];
  }

  async transaction<T>(work: (tx: SqlRunner) => Promise<T>): Promise<T> {
    return work(this);
  }
}

/** The ingest statement captured answers no device, so none is back online. */
class NoReturns extends DeviceReturns {
  async backOnline(): Promise<void> {}
}

async function captureAll(run: (sql: CapturingSql) => Promise<unknown>, expected: number): Promise<Captured[]> {
  const sql = new CapturingSql();
  await run(sql);
  if (sql.calls.length !== expected) throw new Error(`expected ${expected} statement(s), captured ${sql.calls.length}`);
  return sql.calls;
}

async function capture(run: (sql: CapturingSql) => Promise<unknown>): Promise<Captured> {
  return (await captureAll(run, 1))[0];
}

/**
 * Checks that the service still sends exactly the statements the baseline copied: same text, and
 * the same prepared-statement name where the service names one. Throws naming every difference.
 */
export async function checkSqlParity(): Promise<void> {
  const now = new Date();
  const asSql = (sql: CapturingSql) => sql as unknown as Sql;
  // Reads that may lag run the same statements on a replica or the primary: captured alike.
  const asReplica = (sql: CapturingSql) => sql as unknown as ReplicaSql;
  const feed = () => new ChangeFeed('postgres://unused');
  const expectations: Array<[string, Captured, string, string | undefined]> = [
    ['telemetry ingest', await capture((sql) => new SqlTelemetryRecordStore(asSql(sql), new TelemetryFeed(), new UnmeasuredIngest(), new NoReturns()).write('d', [{ ts: PARITY_NOW, batteryId: 'main', metrics: { soc: 1 } }], PARITY_NOW)), baseline.INGEST_SQL, baseline.INGEST_NAME],
    ['user in session', await capture((sql) => new SqlSessionUsers(asSql(sql)).find('u', 's')), baseline.USER_IN_SESSION_SQL, baseline.USER_IN_SESSION_NAME],
    ['offerable releases', await capture((sql) => new SqlReleaseOfferStore(asSql(sql), feed()).offerableReleases()), baseline.OFFERABLE_RELEASES_SQL, baseline.OFFERABLE_RELEASES_NAME],
    ['record offer', await capture((sql) => new SqlReleaseOfferStore(asSql(sql), feed()).recordOffer('d', 'r', now)), baseline.RECORD_OFFER_SQL, baseline.RECORD_OFFER_NAME],
    ['dashboard visibility', await capture((sql) => new SqlDashboardQueries(asSql(sql), asReplica(sql), new DeviceAccess(new SqlDeviceGrantQueries(asSql(sql)))).visibility({ userId: 'u', isAdmin: false }, 'd')), baseline.DEVICE_VISIBILITY_SQL, baseline.DEVICE_VISIBILITY_NAME],
    [
      'history series',
      await capture((sql) => new SqlTelemetryHistoryQueries(asReplica(sql), new HistoryChunkCache(new Env())).series({ deviceId: 'd', from: now, to: now, bucketSec: 300, metrics: null, batteryId: null })),
      baseline.SERIES_SQL,
      baseline.SERIES_NAME,
    ],
    [
      'battery energy: any stale hours',
      await capture((sql) => new SqlBatteryEnergyStore(asSql(sql), asReplica(sql)).hasStale({ deviceId: 'd', batteryId: 'main' }, now, now).catch(() => false)),
      baseline.ENERGY_HAS_STALE_SQL,
      baseline.ENERGY_HAS_STALE_NAME,
    ],
    ['battery profile', await capture((sql) => new SqlBatteryProfilesStore(asSql(sql), asReplica(sql)).get({ deviceId: 'd', batteryId: 'main' })), baseline.BATTERY_PROFILE_SQL, baseline.BATTERY_PROFILE_NAME],
    ['battery energy sums', await capture((sql) => new SqlBatteryEnergyStore(asSql(sql), asReplica(sql)).sums({ deviceId: 'd', batteryId: 'main' }, now, now, 86_400)), baseline.ENERGY_SUMS_SQL, baseline.ENERGY_SUMS_NAME],
    ['pending commands', await capture((sql) => new SqlCommandStore(asSql(sql)).pending('d', now)), baseline.COMMAND_PENDING_SQL, baseline.COMMAND_PENDING_NAME],
  ];
  const [usageTake, logInsert, usageAdd] = await captureAll(
    (sql) => new SqlDeviceLogStore(asSql(sql)).store('d', [PARITY_LINE], now, '2026-01-01', 1_048_576),
    3,
  );
  expectations.push(
    ['log usage taken', usageTake, baseline.LOG_USAGE_TAKE_SQL, baseline.LOG_USAGE_TAKE_NAME],
    ['log lines inserted', logInsert, baseline.LOG_INSERT_SQL, baseline.LOG_INSERT_NAME],
    ['log usage added', usageAdd, baseline.LOG_USAGE_ADD_SQL, baseline.LOG_USAGE_ADD_NAME],
  );
  const problems = expectations
    .filter(([, captured, text, name]) => captured.text !== text || captured.name !== name)
    .map(([label]) => `${label}: the service's statement differs from bench/baseline-sql.ts; copy it again`);
  if (problems.length > 0) throw new Error(`SQL parity check failed:\n  ${problems.join('\n  ')}`);
}
