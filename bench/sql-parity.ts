import 'reflect-metadata';
import { ChangeFeed } from '../src/shared/database/change-feed.js';
import { DashboardQueries } from '../src/modules/dashboard/application/dashboard.queries.js';
import { TypeOrmUserRepository } from '../src/modules/accounts/infrastructure/typeorm-user.repository.js';
import { TypeOrmDeviceRepository } from '../src/modules/devices/infrastructure/typeorm-device.repository.js';
import { SqlFleetDefaultsStore } from '../src/modules/devices/infrastructure/sql-fleet-defaults.store.js';
import { SqlFirmwareReleases } from '../src/modules/ota/infrastructure/sql-firmware-releases.js';
import { TelemetryWriter } from '../src/modules/telemetry/infrastructure/telemetry-writer.js';
import { rollupSpans } from '../src/modules/telemetry/domain/history-query.js';
import { SqlRefreshTokenStore } from '../src/shared/auth-tokens/refresh-token-store.js';
import type { Sql, SqlRunner } from '../src/shared/database/sql.js';
import * as baseline from './baseline-sql.js';

interface Captured {
  text: string;
  name: string | undefined;
}

/** Stands in for the service's Sql and records what it is asked to run. */
class CapturingSql implements SqlRunner {
  readonly calls: Captured[] = [];

  async rows<T>(text: string, _values: unknown[] = [], name?: string): Promise<T[]> {
    this.calls.push({ text, name });
    if (text.includes('FROM config_defaults')) return [{ settings: {}, revision: 1, updated_at: new Date() }] as T[];
    return (text.includes('AS inserted') ? [{ inserted: 0 }] : []) as T[];
  }
}

async function capture(run: (sql: CapturingSql) => Promise<unknown>): Promise<Captured> {
  const sql = new CapturingSql();
  await run(sql);
  if (sql.calls.length !== 1) throw new Error(`expected one statement, captured ${sql.calls.length}`);
  return sql.calls[0];
}

/**
 * Checks that the service still sends exactly the statements the baseline copied: same text, and
 * the same prepared-statement name where the service names one. Throws naming every difference.
 */
export async function checkSqlParity(): Promise<void> {
  const now = new Date();
  const asSql = (sql: CapturingSql) => sql as unknown as Sql;
  const feed = () => new ChangeFeed('postgres://unused');
  const expectations: Array<[string, Captured, string, string | undefined]> = [
    ['telemetry ingest', await capture((sql) => new TelemetryWriter(asSql(sql)).write('d', [{ ts: now, batteryId: 'main', metrics: { soc: 1 } }], now)), baseline.INGEST_SQL, baseline.INGEST_NAME],
    ['device by id', await capture((sql) => new TypeOrmDeviceRepository(asSql(sql), feed()).findById('d')), baseline.DEVICE_BY_ID_SQL, baseline.DEVICE_BY_ID_NAME],
    ['mark credentials used', await capture((sql) => new TypeOrmDeviceRepository(asSql(sql), feed()).markCredentialsUsed('d', now)), baseline.MARK_CREDENTIALS_USED_SQL, baseline.MARK_CREDENTIALS_USED_NAME],
    ['user by id', await capture((sql) => new TypeOrmUserRepository(asSql(sql)).findById('u')), baseline.USER_BY_ID_SQL, baseline.USER_BY_ID_NAME],
    ['user in session', await capture((sql) => new TypeOrmUserRepository(asSql(sql)).findInSession('u', 's')), baseline.USER_IN_SESSION_SQL, baseline.USER_IN_SESSION_NAME],
    ['user by email', await capture((sql) => new TypeOrmUserRepository(asSql(sql)).findByEmail('e')), baseline.USER_BY_EMAIL_SQL, undefined],
    [
      'device refresh token',
      await capture((sql) => new SqlRefreshTokenStore(sql, 'device_refresh_tokens', 'device_id').insert({ subjectId: 'd', tokenVersion: 1, familyId: 'f', tokenHash: 'h', issuedAt: now, expiresAt: now })),
      baseline.INSERT_DEVICE_REFRESH_TOKEN_SQL,
      undefined,
    ],
    [
      'user refresh token',
      await capture((sql) => new SqlRefreshTokenStore(sql, 'user_refresh_tokens', 'user_id').insert({ subjectId: 'u', tokenVersion: 1, familyId: 'f', tokenHash: 'h', issuedAt: now, expiresAt: now })),
      baseline.INSERT_USER_REFRESH_TOKEN_SQL,
      undefined,
    ],
    ['fleet defaults', await capture((sql) => new SqlFleetDefaultsStore(asSql(sql), feed()).current()), baseline.CONFIG_DEFAULTS_SQL, baseline.CONFIG_DEFAULTS_NAME],
    ['offerable releases', await capture((sql) => new SqlFirmwareReleases(asSql(sql), feed()).offerableReleases()), baseline.OFFERABLE_RELEASES_SQL, baseline.OFFERABLE_RELEASES_NAME],
    ['record offer', await capture((sql) => new SqlFirmwareReleases(asSql(sql), feed()).recordOffer('d', 'r', now)), baseline.RECORD_OFFER_SQL, baseline.RECORD_OFFER_NAME],
    ['dashboard visibility', await capture((sql) => new DashboardQueries(asSql(sql)).visibility({ userId: 'u', isAdmin: false }, 'd')), baseline.DEVICE_VISIBILITY_SQL, baseline.DEVICE_VISIBILITY_NAME],
    [
      'history series',
      await capture((sql) => new DashboardQueries(asSql(sql)).series({ deviceId: 'd', from: now, to: now, bucketSec: 300, spans: rollupSpans({ from: now, to: now }, 300), metrics: null, batteryId: null })),
      baseline.SERIES_SQL,
      baseline.SERIES_NAME,
    ],
  ];
  const problems = expectations
    .filter(([, captured, text, name]) => captured.text !== text || captured.name !== name)
    .map(([label]) => `${label}: the service's statement differs from bench/baseline-sql.ts; copy it again`);
  if (problems.length > 0) throw new Error(`SQL parity check failed:\n  ${problems.join('\n  ')}`);
}
