import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { EmbeddedPostgresHandle } from '../../src/shared/database/embedded-postgres.js';

/**
 * Jest compiles global setup to CommonJS without moduleNameMapper, so `./x.js` imports of our
 * TypeScript sources would not resolve: fall back to the `.ts` file for this process only.
 */
function resolveTsSources(): void {
  const loader = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const resolve = loader._resolveFilename;
  loader._resolveFilename = function (request: string, ...rest: unknown[]) {
    try {
      return resolve.call(this, request, ...rest);
    } catch (error) {
      if (request.startsWith('.') && request.endsWith('.js')) return resolve.call(this, `${request.slice(0, -3)}.ts`, ...rest);
      throw error;
    }
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * Creates the run's template database on the server and migrates it with the service's own
 * migrations; every test file's database is then a copy of it (test/support/postgres.ts). The name
 * is unique per run, so two runs against one TEST_DATABASE_URL do not clash.
 */
async function createMigratedTemplate(serverUrl: string): Promise<string> {
  const name = `dcs_template_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const { runMigrations } = await import('../../src/shared/database/migrate.js');
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  // runMigrations closes its own connections: PostgreSQL copies a template only while no one is connected to it.
  await runMigrations(url.toString());
  return name;
}

/**
 * One real PostgreSQL for the whole run: TEST_DATABASE_URL when set, else an embedded server in a
 * temporary directory. On it one migrated template, which each test file copies into its own database.
 */
export default async function globalSetup(): Promise<void> {
  resolveTsSources();
  if (!process.env.TEST_DATABASE_URL) {
    const { startEmbeddedPostgres } = await import('../../src/shared/database/embedded-postgres.js');
    const dataDir = mkdtempSync(join(tmpdir(), 'dcs-test-pg-'));
    const handle: EmbeddedPostgresHandle = await startEmbeddedPostgres({ dataDir, port: await freePort(), persistent: false });
    process.env.TEST_DATABASE_URL = handle.url('postgres');
    (globalThis as { __embeddedPostgres?: EmbeddedPostgresHandle; __embeddedPostgresDir?: string }).__embeddedPostgres = handle;
    (globalThis as { __embeddedPostgresDir?: string }).__embeddedPostgresDir = dataDir;
  }
  // Global setup runs in Jest's parent process; the workers inherit its environment.
  process.env.TEST_TEMPLATE_DATABASE = await createMigratedTemplate(process.env.TEST_DATABASE_URL);
  // Where the files that start the service as a process find its one build of this run (test/support/service-process.ts).
  mkdirSync(join(process.cwd(), 'test-output'), { recursive: true });
  process.env.TEST_SERVICE_BUILD_DIR = join(process.cwd(), 'test-output', `service-build-${process.env.TEST_TEMPLATE_DATABASE}`);
  if (process.env.TEST_SERVICE_PREBUILT) await usePrebuiltService(process.env.TEST_SERVICE_PREBUILT, process.env.TEST_SERVICE_BUILD_DIR);
}

/**
 * CI runs `npm run build` on this tree just before the tests: a copy of that dist/ stands for the
 * run's build, marked finished, so no test file compiles the same sources again. A copy made
 * before any file runs, not dist/ itself, which the start:dev test's tsc --watch writes again.
 */
async function usePrebuiltService(prebuilt: string, buildDir: string): Promise<void> {
  if (!existsSync(join(prebuilt, 'src', 'main.js'))) throw new Error(`TEST_SERVICE_PREBUILT=${prebuilt} holds no src/main.js: run npm run build first`);
  // Imported here, as the sources above: only after resolveTsSources() can `./x.js` find x.ts.
  const { serviceBuildPaths } = await import('./service-build.js');
  const { outDir, built } = serviceBuildPaths(buildDir);
  mkdirSync(buildDir);
  cpSync(prebuilt, outDir, { recursive: true });
  writeFileSync(built, '');
}
