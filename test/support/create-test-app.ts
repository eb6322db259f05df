import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import createClient, { type Client } from 'openapi-fetch';
import pg from 'pg';
import { createApp } from '../../src/configure-app.js';
import { loadEnv } from '../../src/config/env.js';
import { resolveSecrets, type Secrets } from '../../src/config/secrets.js';
import type { Argon2Cost } from '../../src/shared/crypto/secret-hasher.js';
import { runMigrations } from '../../src/shared/database/migrate.js';
import type { paths } from '@device-cloud/client';
import { OffsetClock } from '../fakes/config/offset-clock.js';
import { contractCheck } from './contract.js';
import { assertNoLeaks, fileScanner } from './leak-scan.js';
import { TEST_HASH_COST } from './hash-cost.js';
import { createTestDatabase, endPool } from './postgres.js';

export type ApiClient = Client<paths>;

export interface TestApp {
  app: NestFastifyApplication;
  baseUrl: string;
  /** The generated OpenAPI client: tests talk to the server only through it. */
  api: ApiClient;
  /** Direct access to the test database, for asserting what changed. */
  db: pg.Pool;
  secrets: Secrets;
  /** The service's Clock: move it past a window or a grace instead of waiting for it. */
  clock: OffsetClock;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** argon2id's cost; TEST_HASH_COST by default (test/support/hash-cost.ts). */
  passwordHashCost?: Argon2Cost;
}

/**
 * Boots the real application (same createApp as main.ts) on a fresh database of the test
 * PostgreSQL, listening on a random local port.
 */
export async function createTestApp(overrides: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  const app = await startTestApp(database.url, overrides, options);
  return {
    ...app,
    close: async () => {
      try {
        await app.close();
      } finally {
        await database.drop();
      }
    },
  };
}

/**
 * Starts the application on an existing test database and leaves the database in place on close:
 * for tests about what a restart does with data an earlier instance left.
 *
 * Every answer of the client and every log line go to the test file's leak scanner
 * (test/support/leak-scan.ts); close() fails if any of them carries a secret, a stored hash or
 * another user's e-mail.
 */
export async function startTestApp(databaseUrl: string, overrides: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  await runMigrations(databaseUrl);
  const dataDir = mkdtempSync(join(tmpdir(), 'dcs-test-data-'));
  const env = loadEnv({
    NODE_ENV: 'test',
    // Captured in memory for the leak scan, never printed.
    LOG_LEVEL: 'debug',
    DATA_DIR: dataDir,
    DB_POOL_SIZE: '5',
    // Every suite signs up its customers from 127.0.0.1; the per-address limit has its own tests
    // (accounts.e2e-spec.ts), which set it back.
    SIGNUP_MAX_PER_ADDRESS_PER_HOUR: '1000000',
    // Likewise devices: a suite registers far more from 127.0.0.1 than any installer; the tests of
    // the registration limit (device-registration-limits.e2e-spec.ts) set it back.
    REGISTRATION_MAX_PER_ADDRESS: '1000000',
    // Most suites publish releases for what follows from them (offers, events, health), unsigned;
    // the signing tests (firmware-signing.e2e-spec.ts) run with the default, which requires it.
    FIRMWARE_REQUIRE_SIGNATURE: 'false',
    // A suite that reads the telemetry rows' table must not find a day compacted under it when the
    // hour turns; the compaction suites (telemetry-compaction*.e2e-spec.ts) run it themselves.
    TELEMETRY_COMPACTION_ENABLED: 'false',
    ...overrides,
  });
  const secrets = resolveSecrets(env);
  for (const [name, value] of Object.entries(secrets)) if (typeof value === 'string') fileScanner.secret(value, `the ${name} key`);
  const clock = new OffsetClock();
  const passwordHashCost = options.passwordHashCost ?? TEST_HASH_COST;
  const app = await createApp({ env, secrets, databaseUrl, logDestination: fileScanner.logDestination, clock, passwordHashCost });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address();
  const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const db = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  const api = createClient<paths>({ baseUrl });
  // Every answer the suite gets through the client must match openapi.json (test/support/contract.ts).
  api.use(contractCheck, fileScanner.middleware);
  return {
    app,
    baseUrl,
    api,
    db,
    secrets,
    clock,
    close: async () => {
      try {
        await app.close();
        // A test that left its database unreachable still gets the scan, without the stored hashes.
        await fileScanner.harvest(db).catch(() => undefined);
      } finally {
        await endPool(db);
        rmSync(dataDir, { recursive: true, force: true });
      }
      assertNoLeaks(fileScanner);
    },
  };
}

/** JWT and hashing keys shared by instances that serve the same database. */
export function sharedSecrets(): Record<string, string> {
  const key = () => randomBytes(32).toString('base64url');
  return { DEVICE_JWT_SECRET: key(), CUSTOMER_JWT_SECRET: key(), SECRET_PEPPER: key() };
}

/** Two instances of the service on one fresh database, with the same secrets: what a load balancer spreads requests over. */
export async function startTwoInstances(overrides: Record<string, string> = {}): Promise<{ a: TestApp; b: TestApp; close(): Promise<void> }> {
  const database = await createTestDatabase();
  const settings = { ...sharedSecrets(), ...overrides };
  const a = await startTestApp(database.url, settings);
  const b = await startTestApp(database.url, settings);
  return {
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
      await database.drop();
    },
  };
}
