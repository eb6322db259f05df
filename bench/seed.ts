import 'reflect-metadata';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as argon2 from 'argon2';
import pg from 'pg';
import { DataSource } from 'typeorm';
import type { SchedulerRegistry } from '@nestjs/schedule';
import type { Env } from '../src/config/env.js';
import { BatteryEnergy } from '../src/modules/batteries/application/battery-energy.js';
import { SqlBatteryEnergyStore } from '../src/modules/batteries/infrastructure/sql-battery-energy.store.js';
import { SqlTelemetryCompactionStore } from '../src/modules/telemetry/infrastructure/sql-telemetry-compaction.store.js';
import { byCodePoint } from '../src/shared/kernel/code-point-order.js';
import { SqlTelemetryPartitionStore } from '../src/modules/telemetry/infrastructure/sql-telemetry-partition.store.js';
import { DEFAULT_SETTLED_HOURS } from '../src/config/env.js';
import { postgresCpuUs } from './proc-stats.js';
import { dataSourceOptions, MIGRATIONS } from '../src/shared/database/data-source-options.js';
import { runMigrations } from '../src/shared/database/migrate.js';
import { ReadReplicas } from '../src/shared/database/read-replicas.js';
import { ReplicaSql } from '../src/shared/database/replica-sql.js';
import { Sql } from '../src/shared/database/sql.js';
import { ARGON2_OPTIONS } from '../src/shared/crypto/secret-hasher.js';
import {
  BATTERY_ID,
  CUSTOMER_PASSWORD,
  customersOf,
  devicesOf,
  gatewaysOf,
  liveDevicesOf,
  operatorsOf,
  ORGANIZATION_ID,
  organizationDevicesOf,
  organizationMembersOf,
  viewersOf,
  type CustomerFixture,
  type DeviceFixture,
} from './fixtures.js';

export interface SeedPlan {
  devices: number;
  days: number;
}

export interface SeedInfo extends SeedPlan {
  /** End of the seeded history (exclusive), aligned to 5 minutes; ingest writes from here on. */
  t0: string;
  records: number;
  rollupRows: number;
  migrations: string[];
  seconds: { telemetryAndRollup: number; indexes: number; vacuumAnalyze: number; batteryEnergy?: number; total: number };
  /** battery_energy_1h holds the history's hours (databases seeded before battery analytics get them at their next reuse). */
  batteryEnergy?: boolean;
  /**
   * On disk after seeding: the raw telemetry's heap (main fork) and indexes, the rollups' whole
   * (heap, TOAST, indexes), and each rollup level's whole (absent in databases seeded before it was measured).
   */
  bytes: { telemetryHeap: number; telemetryIndexes: number; rollupTotal: number; rollupLevels?: Record<string, number>; compactDays?: number };
  /**
   * The settled days moved into the compact layout by the service's compaction statement, as its
   * job would have at t0 (absent in databases seeded before it): the days and records moved, the
   * wall time and PostgreSQL's CPU time it took, and the records left as rows (the recent days).
   */
  compaction?: { before: string; days: number; records: number; seconds: number; postgresCpuSeconds: number | null; rowRecords: number };
  /** This run reused a database seeded earlier (rows ingested by earlier runs were deleted). */
  reused?: boolean;
  cleanupSeconds?: number;
}

const SAMPLE_SEC = 10;
const SLOT_SEC = 300;
const RETENTION_DAYS = 365;
const WORKERS = 2;

type Log = (message: string) => void;

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'bench-seed' });
  await client.connect();
  // Session settings for bulk work only; the benchmark itself runs on the server's defaults.
  await client.query("SET work_mem = '512MB'");
  await client.query("SET maintenance_work_mem = '2GB'");
  await client.query('SET max_parallel_maintenance_workers = 2');
  await client.query('SET synchronous_commit = off');
  return client;
}

const seconds = (since: number) => Math.round((Date.now() - since) / 100) / 10;

/** The partitions the service would have made at start, made by the service's own code. */
async function createPartitions(url: string, now: Date): Promise<void> {
  const dataSource = new DataSource(dataSourceOptions({ url, poolSize: 1 }));
  await dataSource.initialize();
  try {
    await new SqlTelemetryPartitionStore(new Sql(dataSource)).maintain(now, RETENTION_DAYS);
  } finally {
    await dataSource.destroy();
  }
}

/** Every fleet battery's profile (S7's equivalent full cycles): a 48 V LFP pack of 100 Ah. */
async function insertBatteryProfiles(client: pg.Client, devices: DeviceFixture[], at: Date): Promise<void> {
  await client.query(
    `INSERT INTO battery_profiles (device_id, battery_id, name, chemistry, nominal_voltage, capacity_ah, updated_at)
     SELECT device_id, '${BATTERY_ID}', 'Bank', 'lfp', 51.2, 100, $2 FROM unnest($1::text[]) AS d (device_id)
     ON CONFLICT DO NOTHING`,
    [devices.map((device) => device.deviceId), at],
  );
}

const HOUR_MS = 3_600_000;

/**
 * battery_energy_1h for the fleet's hours in [from, to), computed by the service's own code: the
 * hours are marked stale as the ingest statement marks them, then BatteryEnergy recomputes them as
 * a read of each battery's energy would (two batteries at a time). The hours of earlier ingest
 * runs, from the first hour on, are dropped first.
 */
async function seedBatteryEnergy(url: string, from: Date, to: Date, log: Log): Promise<number> {
  const began = Date.now();
  const client = await connect(url);
  const dataSource = new DataSource(dataSourceOptions({ url, poolSize: WORKERS }));
  try {
    const first = new Date(Math.floor(from.getTime() / HOUR_MS) * HOUR_MS);
    await client.query('DELETE FROM battery_energy_stale');
    await client.query('DELETE FROM battery_energy_1h WHERE bucket >= $1', [first]);
    const { rowCount } = await client.query(
      `INSERT INTO battery_energy_stale (device_id, battery_id, bucket)
       SELECT d.device_id, '${BATTERY_ID}', h FROM devices d CROSS JOIN generate_series($1::timestamptz, $2::timestamptz, interval '1 hour') AS h
        WHERE EXISTS (SELECT 1 FROM telemetry t WHERE t.device_id = d.device_id AND t.ts >= $1 AND t.ts < $2)`,
      [first, new Date(to.getTime() - 1)],
    );
    log(`Battery energy: recomputing ${(rowCount ?? 0).toLocaleString('en-US')} battery-hours with the service's BatteryEnergy…`);
    await dataSource.initialize();
    const sql = new Sql(dataSource);
    const primaryOnly = new ReplicaSql(sql, new ReadReplicas({ urls: [], maxLagMs: 5000, checkIntervalMs: 1000 }, { url, poolSize: 1 }, () => null));
    const energy = new BatteryEnergy(new SqlBatteryEnergyStore(sql, primaryOnly), undefined as unknown as SchedulerRegistry, { BATTERY_ANALYTICS_ENABLED: true } as Env);
    const { rows: batteries } = await client.query<{ device_id: string; battery_id: string }>('SELECT DISTINCT device_id, battery_id FROM battery_energy_stale');
    let next = 0;
    const worker = async () => {
      while (next < batteries.length) {
        const battery = batteries[next++];
        await energy.buckets({ deviceId: battery.device_id, batteryId: battery.battery_id }, first, to, 3600);
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    const { rows } = await client.query<{ left: string }>('SELECT count(*) AS left FROM battery_energy_stale');
    if (Number(rows[0].left) > 0) throw new Error(`battery energy seeding left ${rows[0].left} hours stale (a recomputation failed)`);
    await client.query('VACUUM (ANALYZE) battery_energy_1h, battery_energy_stale, battery_profiles');
  } finally {
    await client.end();
    if (dataSource.isInitialized) await dataSource.destroy();
  }
  return seconds(began);
}

/**
 * One live session per customer (a refresh-token family), which the bench's customer tokens name
 * as `sid`: the customer guard refuses a token whose session has no live refresh token.
 */
async function insertSessions(client: pg.Client, customers: CustomerFixture[], at: Date): Promise<void> {
  await client.query(
    `INSERT INTO user_refresh_tokens (id, user_id, token_version, family_id, token_hash, issued_at, expires_at)
     SELECT family_id, user_id, 1, family_id, encode(sha256(convert_to(family_id::text, 'UTF8')), 'hex'), $3::timestamptz, $3::timestamptz + interval '365 days'
       FROM unnest($1::uuid[], $2::uuid[]) AS s (user_id, family_id)`,
    [customers.map((c) => c.userId), customers.map((c) => c.sessionId), at],
  );
}

/** Verified customer accounts (e-mail verified, as claiming requires) and the devices they own, claimed. ON CONFLICT: S6's viewers are added to databases seeded before them. */
async function insertAccountsAndDevices(client: pg.Client, customers: CustomerFixture[], devices: DeviceFixture[], at: Date): Promise<void> {
  // One argon2id hash (the service's parameters) serves every customer: each login still verifies in full.
  const passwordHash = await argon2.hash(CUSTOMER_PASSWORD, ARGON2_OPTIONS);
  await client.query(
    `INSERT INTO users (id, email, password_hash, role, email_verified_at, token_version, created_at)
     SELECT id, email, $3, 'customer', $4, 1, $4 FROM unnest($1::uuid[], $2::text[]) AS c (id, email)
     ON CONFLICT DO NOTHING`,
    [customers.map((c) => c.userId), customers.map((c) => c.email), passwordHash, at],
  );
  // Each account's personal organization (its id the account's), which owns its devices, as the service makes at sign-up.
  await client.query(
    `INSERT INTO organizations (organization_id, name, personal_of, created_at, updated_at)
     SELECT id, 'Personal', id, $2, $2 FROM unnest($1::uuid[]) AS c (id)
     ON CONFLICT DO NOTHING`,
    [customers.map((c) => c.userId), at],
  );
  await client.query(
    `INSERT INTO organization_members (member_id, organization_id, email, user_id, role, invited_at)
     SELECT gen_random_uuid(), id, email, id, 'owner', $3 FROM unnest($1::uuid[], $2::text[]) AS c (id, email)
     ON CONFLICT DO NOTHING`,
    [customers.map((c) => c.userId), customers.map((c) => c.email), at],
  );
  const registered = new Date(at.getTime() - 86_400_000);
  await client.query(
    `INSERT INTO devices (device_id, hardware_id, firmware_version, claim_code_hash, secret_hash, token_version, registered_at,
                          credentials_issued_at, credentials_used_at, last_seen_at, owner_id, claimed_at)
     SELECT device_id, 'hw-' || device_id, '0.1.4', NULL, secret_hash, 1, $4, $4, $4, NULL, owner_id, $4
       FROM unnest($1::text[], $2::text[], $3::uuid[]) AS d (device_id, secret_hash, owner_id)
     ON CONFLICT DO NOTHING`,
    [devices.map((d) => d.deviceId), devices.map((d) => d.secretHash), devices.map((d) => customers[d.ownerIndex].userId), registered],
  );
}

async function insertIdentities(client: pg.Client, plan: SeedPlan, start: Date): Promise<void> {
  const customers = customersOf(plan.devices);
  await insertAccountsAndDevices(client, customers, devicesOf(plan.devices), start);
  await insertSessions(client, customers, start);
  await insertBatteryProfiles(client, devicesOf(plan.devices), start);
}

/**
 * S6's viewers, each with its one device (bench/fixtures.ts), added after the history so they
 * have none, and given a live session again (a reset deletes every refresh token). Outside the
 * seed plan: the fleet, its history and S1–S5 do not change.
 */
async function ensureLiveViewers(url: string, at: Date): Promise<void> {
  const client = await connect(url);
  try {
    const viewers = viewersOf();
    await insertAccountsAndDevices(client, viewers, liveDevicesOf(), at);
    await client.query('DELETE FROM user_refresh_tokens WHERE user_id = ANY($1::uuid[])', [viewers.map((viewer) => viewer.userId)]);
    await insertSessions(client, viewers, at);
  } finally {
    await client.end();
  }
}

/**
 * S9's and S10's gateways and their operators (bench/fixtures.ts), added like S6's viewers, with
 * a live session each again; what earlier runs left of theirs goes: their commands (S9) and every
 * log line with its daily usage (S10; only the bench writes logs, and a day's usage counts against
 * the quota).
 */
async function ensureGateways(url: string, at: Date): Promise<void> {
  const client = await connect(url);
  try {
    const operators = operatorsOf();
    const gateways = gatewaysOf();
    await insertAccountsAndDevices(client, operators, gateways, at);
    await client.query('DELETE FROM user_refresh_tokens WHERE user_id = ANY($1::uuid[])', [operators.map((operator) => operator.userId)]);
    await insertSessions(client, operators, at);
    await client.query('DELETE FROM device_commands WHERE device_id = ANY($1::text[])', [gateways.map((gateway) => gateway.deviceId)]);
    await client.query('TRUNCATE device_logs, device_log_usage');
    await client.query('VACUUM (ANALYZE) devices, users, device_commands, device_log_usage');
  } finally {
    await client.end();
  }
}

/**
 * S11's organization, its 10,000 devices and its member (bench/fixtures.ts), added like S6's
 * viewers: after the history, so the devices have none, and outside the seed plan. The member is a
 * verified account with its personal organization, as every account, and a bound `operator` of
 * the organization, with a live session again.
 */
async function ensureOrganization(url: string, at: Date): Promise<void> {
  const client = await connect(url);
  try {
    const members = organizationMembersOf();
    const devices = organizationDevicesOf();
    await insertAccountsAndDevices(client, members, [], at);
    await client.query(
      `INSERT INTO organizations (organization_id, name, personal_of, created_at, updated_at) VALUES ($1, 'Bench organization', NULL, $2, $2)
       ON CONFLICT DO NOTHING`,
      [ORGANIZATION_ID, at],
    );
    await client.query(
      `INSERT INTO organization_members (member_id, organization_id, email, user_id, role, invited_at)
       SELECT gen_random_uuid(), $1, email, id, 'operator', $4 FROM unnest($2::uuid[], $3::text[]) AS m (id, email)
       ON CONFLICT DO NOTHING`,
      [ORGANIZATION_ID, members.map((member) => member.userId), members.map((member) => member.email), at],
    );
    const registered = new Date(at.getTime() - 86_400_000);
    await client.query(
      `INSERT INTO devices (device_id, hardware_id, firmware_version, claim_code_hash, secret_hash, token_version, registered_at,
                            credentials_issued_at, credentials_used_at, last_seen_at, owner_id, claimed_at)
       SELECT device_id, 'hw-' || device_id, '0.1.4', NULL, secret_hash, 1, $3, $3, $3, NULL, $4, $3
         FROM unnest($1::text[], $2::text[]) AS d (device_id, secret_hash)
       ON CONFLICT DO NOTHING`,
      [devices.map((d) => d.deviceId), devices.map((d) => d.secretHash), registered, ORGANIZATION_ID],
    );
    await client.query('DELETE FROM user_refresh_tokens WHERE user_id = ANY($1::uuid[])', [members.map((member) => member.userId)]);
    await insertSessions(client, members, at);
    await client.query('VACUUM (ANALYZE) devices, organizations, organization_members');
  } finally {
    await client.end();
  }
}

interface SavedIndex {
  drop: string;
  create: string;
}

/** The primary keys and indexes of the seeded tables, to drop before loading and rebuild after. */
async function indexesOf(client: pg.Client, table: string): Promise<SavedIndex[]> {
  const constraints = await client.query<{ name: string; def: string }>(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('p', 'u')`,
    [table],
  );
  const indexes = await client.query<{ name: string; def: string }>(
    `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS def
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
      WHERE x.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)`,
    [table],
  );
  return [
    ...constraints.rows.map((c) => ({ drop: `ALTER TABLE ${table} DROP CONSTRAINT ${c.name}`, create: `ALTER TABLE ${table} ADD CONSTRAINT ${c.name} ${c.def}` })),
    ...indexes.rows.map((i) => ({ drop: `DROP INDEX ${i.name}`, create: i.def })),
  ];
}

/**
 * One chunk of history for every device, in time order, and its 5-minute rollup aggregated from
 * exactly the rows inserted (as the service's ingest statement does). Chunks are whole 5-minute
 * slots, so no rollup slot spans two chunks.
 */
const CHUNK_SQL = `
WITH inserted AS (
  INSERT INTO telemetry (device_id, battery_id, ts, metrics, received_at)
  SELECT d.device_id, '${BATTERY_ID}', t.ts,
         jsonb_build_object(
           'voltage', round((52.0 + 1.2 * sin(x.e / 5400.0 + d.n) + 0.05 * random())::numeric, 3),
           'current', round((12.0 * sin(x.e / 3600.0 + 0.7 * d.n) + 0.3 * random())::numeric, 2),
           'soc', round((55.0 + 40.0 * sin(x.e / 43200.0 + d.n))::numeric, 1),
           'temperature', round((23.0 + 5.0 * sin(x.e / 13751.0 + d.n) + 0.2 * random())::numeric, 2)),
         t.ts + interval '2 seconds'
    FROM generate_series($1::timestamptz, $2::timestamptz - interval '${SAMPLE_SEC} seconds', interval '${SAMPLE_SEC} seconds') AS t (ts)
   CROSS JOIN LATERAL (SELECT extract(epoch FROM t.ts)::float8 AS e) AS x
   CROSS JOIN (SELECT device_id, row_number() OVER (ORDER BY device_id)::float8 AS n FROM devices) AS d
   ORDER BY t.ts, d.device_id
  RETURNING device_id, battery_id, ts, metrics
)
INSERT INTO telemetry_rollup_5m (device_id, battery_id, metric, bucket, count, sum, min, max)
SELECT device_id, battery_id, m.key, date_bin('5 minutes', ts, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS bucket,
       count(*), sum(m.value::float8), min(m.value::float8), max(m.value::float8)
  FROM inserted CROSS JOIN LATERAL jsonb_each_text(inserted.metrics) AS m (key, value)
 GROUP BY device_id, battery_id, m.key, bucket
 ORDER BY bucket, device_id, battery_id, m.key`;

/** The hourly, 6-hour and daily rollups, summed from the 5-minute one as the migrations do, for slots from $1 on. */
const COARSER_LEVELS = [
  { table: 'telemetry_rollup_1h', width: '1 hour' },
  { table: 'telemetry_rollup_6h', width: '6 hours' },
  { table: 'telemetry_rollup_1d', width: '1 day' },
];

async function buildCoarserRollups(client: pg.Client, from: Date): Promise<void> {
  for (const { table, width } of COARSER_LEVELS) {
    const epoch = "TIMESTAMPTZ '1970-01-01 00:00:00+00'";
    await client.query(`DELETE FROM ${table} WHERE bucket >= date_bin('${width}', $1, ${epoch})`, [from]);
    await client.query(
      `INSERT INTO ${table} (device_id, battery_id, metric, bucket, count, sum, min, max)
       SELECT device_id, battery_id, metric, date_bin('${width}', bucket, ${epoch}), sum(count), sum(sum), min(min), max(max)
         FROM telemetry_rollup_5m WHERE bucket >= date_bin('${width}', $1, ${epoch})
        GROUP BY 1, 2, 3, 4`,
      [from],
    );
  }
}

/** The latest value per metric as ingest leaves it: from each device's last record before t0. */
const LATEST_SQL = `
INSERT INTO device_latest_metrics (device_id, battery_id, metric, ts, value)
SELECT t.device_id, t.battery_id, m.key, t.ts, m.value::float8
  FROM devices d
  CROSS JOIN LATERAL (SELECT * FROM telemetry t WHERE t.device_id = d.device_id AND t.ts < $1 ORDER BY t.ts DESC LIMIT 1) AS t
  CROSS JOIN LATERAL jsonb_each_text(t.metrics) AS m (key, value)`;

async function loadHistory(url: string, start: Date, t0: Date, plan: SeedPlan, log: Log): Promise<void> {
  // About a million records per statement; whole 5-minute slots, at most a day.
  const chunkSec = Math.max(SLOT_SEC, Math.min(86_400, Math.floor(1_000_000 / plan.devices) * SAMPLE_SEC));
  const alignedChunkSec = chunkSec - (chunkSec % SLOT_SEC);
  const chunks: Array<[Date, Date]> = [];
  for (let from = start.getTime(); from < t0.getTime(); from += alignedChunkSec * 1000) {
    chunks.push([new Date(from), new Date(Math.min(from + alignedChunkSec * 1000, t0.getTime()))]);
  }
  const began = Date.now();
  let done = 0;
  let next = 0;
  const worker = async () => {
    const client = await connect(url);
    try {
      while (next < chunks.length) {
        const [from, to] = chunks[next++];
        await client.query(CHUNK_SQL, [from, to]);
        done += 1;
        if (done % Math.max(1, Math.floor(chunks.length / 10)) === 0 || done === chunks.length) {
          const records = Math.round(((done * alignedChunkSec) / SAMPLE_SEC) * plan.devices);
          log(`  seeded ${done}/${chunks.length} chunks, ~${(records / 1e6).toFixed(1)} M records, ${Math.round(records / Math.max(1, (Date.now() - began) / 1000))} records/s`);
        }
      }
    } finally {
      await client.end();
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
}

/** The rollup levels, finest first, by their tables. */
const ROLLUP_LEVELS = ['5m', '1h', '6h', '1d'] as const;

async function sizes(client: pg.Client): Promise<SeedInfo['bytes']> {
  const { rows } = await client.query<{ heap: string; indexes: string; compact_days: string } & Record<`rollup_${(typeof ROLLUP_LEVELS)[number]}`, string>>(
    `SELECT (SELECT coalesce(sum(pg_relation_size(inhrelid)), 0) FROM pg_inherits WHERE inhparent = 'telemetry'::regclass) AS heap,
            (SELECT coalesce(sum(pg_indexes_size(inhrelid)), 0) FROM pg_inherits WHERE inhparent = 'telemetry'::regclass) AS indexes,
            ${ROLLUP_LEVELS.map((level) => `pg_total_relation_size('telemetry_rollup_${level}') AS rollup_${level}`).join(', ')},
            pg_total_relation_size('telemetry_days') + pg_total_relation_size('telemetry_hours') AS compact_days`,
  );
  const rollupLevels = Object.fromEntries(ROLLUP_LEVELS.map((level) => [level, Number(rows[0][`rollup_${level}`])]));
  const rollupTotal = Object.values(rollupLevels).reduce((sum, bytes) => sum + bytes, 0);
  return { telemetryHeap: Number(rows[0].heap), telemetryIndexes: Number(rows[0].indexes), rollupTotal, rollupLevels, compactDays: Number(rows[0].compact_days) };
}

/**
 * Moves the settled days (those that ended TELEMETRY_SETTLED_HOURS before t0) into the compact
 * layout with the service's own statement, as its compaction job would have by t0; two workers,
 * a device each at a time. Then VACUUM FULL gives the rows' space back (the service's autovacuum
 * would let new rows reuse it; a file that keeps it would count it twice here).
 */
async function compactSettled(url: string, t0: Date, postmasterPid: number | undefined, log: Log): Promise<NonNullable<SeedInfo['compaction']>> {
  const before = new Date(Math.floor((t0.getTime() - DEFAULT_SETTLED_HOURS * 3_600_000) / 86_400_000) * 86_400_000);
  const began = Date.now();
  const cpuBefore = postmasterPid === undefined ? null : postgresCpuUs(postmasterPid);
  const dataSource = new DataSource(dataSourceOptions({ url, poolSize: WORKERS + 1 }));
  await dataSource.initialize();
  let days = 0;
  let records = 0;
  try {
    const store = new SqlTelemetryCompactionStore(new Sql(dataSource));
    const pending = await store.pending(before, null, 1_000_000);
    const work: { deviceId: string; day: Date }[] = [];
    for (const { deviceId, day: first } of pending) {
      for (let day: Date | null = first; day; day = await store.nextDay(deviceId, new Date(day.getTime() + 86_400_000), before)) work.push({ deviceId, day });
    }
    // A day at a time across the fleet, the order in which a running service's job meets settled
    // days (each day, one more of every device), with progress on the long full data set.
    work.sort((a, b) => a.day.getTime() - b.day.getTime() || byCodePoint(a.deviceId, b.deviceId));
    log(`Compacting the settled days before ${before.toISOString()} of ${pending.length} devices (${work.length} device-days) with the service's statement…`);
    let next = 0;
    const worker = async () => {
      while (next < work.length) {
        const { deviceId, day } = work[next++];
        // Not `records += await …`: that reads `records` before the other worker adds to it.
        const compacted = await store.compactDay(deviceId, day);
        records += compacted;
        days += 1;
        if (days % 1000 === 0) log(`  ${days} of ${work.length} device-days…`);
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
  } finally {
    await dataSource.destroy();
  }
  const postgresCpuSeconds = cpuBefore === null || postmasterPid === undefined ? null : Math.round((postgresCpuUs(postmasterPid) - cpuBefore) / 10_000) / 100;
  const compactSeconds = seconds(began);
  log(`  ${days} device-days, ${records.toLocaleString('en-US')} records in ${compactSeconds} s (PostgreSQL CPU ${postgresCpuSeconds ?? '?'} s). VACUUM FULL of the rows left…`);
  const client = await connect(url);
  try {
    await client.query('VACUUM (FULL, ANALYZE) telemetry, telemetry_rollup_5m, telemetry_days, telemetry_hours');
    await client.query('CHECKPOINT');
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM telemetry');
    return { before: before.toISOString(), days, records, seconds: compactSeconds, postgresCpuSeconds, rowRecords: Number(rows[0].n) };
  } finally {
    await client.end();
  }
}

async function seedFresh(serverUrl: string, database: string, plan: SeedPlan, postmasterPid: number | undefined, log: Log): Promise<SeedInfo> {
  const began = Date.now();
  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  const url = `${serverUrl}/${database}`;
  await runMigrations(url);
  const now = new Date();
  const t0 = new Date(Math.floor(now.getTime() / (SLOT_SEC * 1000)) * SLOT_SEC * 1000);
  const start = new Date(t0.getTime() - plan.days * 86_400_000);
  await createPartitions(url, now);

  const client = await connect(url);
  try {
    await insertIdentities(client, plan, start);
    const saved = [...(await indexesOf(client, 'telemetry')), ...(await indexesOf(client, 'telemetry_rollup_5m'))];
    for (const index of saved) await client.query(index.drop);

    log(`Seeding ${plan.devices} devices x ${plan.days} days (${((plan.devices * plan.days * 86_400) / SAMPLE_SEC / 1e6).toFixed(1)} M records) in time order…`);
    const loadBegan = Date.now();
    await loadHistory(url, start, t0, plan, log);
    const telemetryAndRollup = seconds(loadBegan);

    log('Building indexes…');
    const indexBegan = Date.now();
    for (const index of saved) await client.query(index.create);
    const indexes = seconds(indexBegan);

    log('Hourly, 6-hour and daily rollups…');
    await buildCoarserRollups(client, start);
    await client.query(LATEST_SQL, [t0]);
    await client.query('UPDATE devices SET last_seen_at = $1', [new Date(t0.getTime() - SAMPLE_SEC * 1000)]);

    log('VACUUM ANALYZE…');
    const vacuumBegan = Date.now();
    await client.query('VACUUM (ANALYZE) telemetry, telemetry_rollup_5m, telemetry_rollup_1h, telemetry_rollup_6h, telemetry_rollup_1d, device_latest_metrics, devices, users');
    await client.query('CHECKPOINT');
    const vacuumAnalyze = seconds(vacuumBegan);
    const batteryEnergy = await seedBatteryEnergy(url, start, t0, log);
    const compaction = await compactSettled(url, t0, postmasterPid, log);

    const counts = await client.query<{ records: string; rollup: string }>(
      'SELECT (SELECT count(*) FROM telemetry) + (SELECT coalesce(sum(cardinality(offsets)), 0) FROM telemetry_hours) AS records, (SELECT count(*) FROM telemetry_rollup_5m) + (SELECT count(*) * 288 FROM telemetry_days) AS rollup',
    );
    return {
      ...plan,
      t0: t0.toISOString(),
      records: Number(counts.rows[0].records),
      rollupRows: Number(counts.rows[0].rollup),
      migrations: MIGRATIONS.map((migration) => migration.name),
      seconds: { telemetryAndRollup, indexes, vacuumAnalyze, batteryEnergy, total: seconds(began) },
      batteryEnergy: true,
      bytes: await sizes(client),
      compaction,
    };
  } finally {
    await client.end();
  }
}

/** Takes a database seeded earlier back to its seeded state: drops what earlier runs ingested. */
async function resetReused(url: string, info: SeedInfo, log: Log): Promise<number> {
  const began = Date.now();
  const client = await connect(url);
  try {
    const t0 = new Date(info.t0);
    log('Reusing the seeded database; removing rows ingested by earlier runs…');
    await client.query('DELETE FROM telemetry WHERE ts >= $1', [t0]);
    await client.query('DELETE FROM telemetry_rollup_5m WHERE bucket >= $1', [t0]);
    await buildCoarserRollups(client, t0);
    await client.query('DELETE FROM device_latest_metrics');
    await client.query(LATEST_SQL, [t0]);
    await client.query('UPDATE devices SET last_seen_at = $1', [new Date(t0.getTime() - SAMPLE_SEC * 1000)]);
    await client.query('DELETE FROM device_refresh_tokens');
    await client.query('DELETE FROM user_refresh_tokens');
    await insertSessions(client, customersOf(info.devices), t0);
    await client.query('DELETE FROM device_release_states');
    // The service's current argon2 parameters for every account (it replaces older hashes at login; the baseline must verify the same).
    await client.query('UPDATE users SET password_hash = $1', [await argon2.hash(CUSTOMER_PASSWORD, ARGON2_OPTIONS)]);
    // Alert evaluation of earlier runs (S1, S2 and S5 breach the soc-low default): no series in progress, no alerts.
    await client.query('DELETE FROM alert_series');
    await client.query('DELETE FROM alerts');
    await insertBatteryProfiles(client, devicesOf(info.devices), t0);
    await client.query('VACUUM (ANALYZE) telemetry, telemetry_rollup_5m, telemetry_rollup_1h, telemetry_rollup_6h, telemetry_rollup_1d, device_latest_metrics, devices, device_refresh_tokens, user_refresh_tokens, alert_series, alerts');
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
  // The hours ingest runs wrote into (from 15 minutes before t0: a record's segment reaches back that far), or, for a database seeded before battery energy existed, every hour.
  const energyFrom = info.batteryEnergy ? new Date(new Date(info.t0).getTime() - 15 * 60_000) : new Date(new Date(info.t0).getTime() - info.days * 86_400_000);
  await seedBatteryEnergy(url, energyFrom, new Date(info.t0), log);
  return seconds(began);
}

/**
 * A database holding the plan's history: the one seeded by an earlier run when it matches (same
 * plan and migrations, seeding completed), else a freshly seeded one.
 */
export async function prepareData(serverUrl: string, database: string, dataDir: string, plan: SeedPlan, reseed: boolean, log: Log, postmasterPid?: number): Promise<SeedInfo> {
  const marker = join(dataDir, 'seed.json');
  const current = MIGRATIONS.map((migration) => migration.name);
  if (!reseed && existsSync(marker)) {
    const info = JSON.parse(readFileSync(marker, 'utf8')) as SeedInfo;
    // Migrations added since the seeding only add tables and columns: apply them instead of seeding again.
    const olderMigrations = info.migrations.length < current.length && info.migrations.every((name, index) => current[index] === name);
    if (info.devices === plan.devices && info.days === plan.days && olderMigrations) {
      log(`Applying ${current.length - info.migrations.length} migration(s) added since the seeding…`);
      await runMigrations(`${serverUrl}/${database}`);
      info.migrations = current;
      writeFileSync(marker, JSON.stringify(info, null, 2));
    }
    if (info.devices === plan.devices && info.days === plan.days && !info.compaction && JSON.stringify(info.migrations) === JSON.stringify(current)) {
      // Seeded before the compact layout: compact its settled days as a fresh seeding would.
      await resetReused(`${serverUrl}/${database}`, info, log);
      info.compaction = await compactSettled(`${serverUrl}/${database}`, new Date(info.t0), postmasterPid, log);
      const client = await connect(`${serverUrl}/${database}`);
      try {
        info.bytes = await sizes(client);
      } finally {
        await client.end();
      }
      writeFileSync(marker, JSON.stringify(info, null, 2));
    }
    const sameMigrations = JSON.stringify(info.migrations) === JSON.stringify(current);
    if (info.devices === plan.devices && info.days === plan.days && sameMigrations) {
      const cleanupSeconds = await resetReused(`${serverUrl}/${database}`, info, log);
      if (!info.batteryEnergy) writeFileSync(marker, JSON.stringify({ ...info, batteryEnergy: true }, null, 2));
      await ensureLiveViewers(`${serverUrl}/${database}`, new Date(info.t0));
      await ensureGateways(`${serverUrl}/${database}`, new Date(info.t0));
      await ensureOrganization(`${serverUrl}/${database}`, new Date(info.t0));
      return { ...info, batteryEnergy: true, reused: true, cleanupSeconds };
    }
    log('The seeded database does not match this plan or the migrations changed: seeding again.');
  }
  rmSync(marker, { force: true });
  const info = await seedFresh(serverUrl, database, plan, postmasterPid, log);
  writeFileSync(marker, JSON.stringify(info, null, 2));
  await ensureLiveViewers(`${serverUrl}/${database}`, new Date(info.t0));
  await ensureGateways(`${serverUrl}/${database}`, new Date(info.t0));
  await ensureOrganization(`${serverUrl}/${database}`, new Date(info.t0));
  return info;
}
