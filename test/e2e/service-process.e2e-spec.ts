import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import createClient from 'openapi-fetch';
import pg from 'pg';
import { COMPACTION_QUEUE } from '../../src/modules/telemetry/application/telemetry-compaction.js';
import { MIGRATIONS } from '../../src/shared/database/data-source-options.js';
import { JOBS_SCHEMA } from '../../src/shared/jobs/job-queue.js';
import type { paths } from '@device-cloud/client';
import { eventually } from '../support/eventually.js';
import { createTestDatabase } from '../support/postgres.js';
import { stoppablePostgres, type StoppablePostgres } from '../support/stoppable-postgres.js';
import { serviceStart } from '../../bench/servers.js';
import {
  buildService,
  freePort,
  httpCall,
  killService,
  portAccepts,
  root,
  runService,
  scratchDir,
  stopLeftoverPostgres,
  waitFor,
  waitUntilReady,
  type Running,
} from '../support/service-process.js';

/**
 * The service as an operator runs it: the compiled main.js with no DATABASE_URL, so it starts its
 * own embedded PostgreSQL under DATA_DIR. Covers `npm start` on a fresh machine, configuration
 * errors, data surviving a restart and graceful shutdown on SIGTERM.
 */
let main = '';
const run = (env: Record<string, string>): Running => runService(main, env);

beforeAll(async () => {
  main = await buildService();
}, 120_000);

describe('configuration errors', () => {
  it('stops at start naming every invalid variable', async () => {
    const service = run({ PORT: 'abc', LOG_LEVEL: 'loud', DATA_DIR: scratchDir() });
    expect(await service.exited).toBe(1);
    expect(service.output()).toMatch(/PORT/);
    expect(service.output()).toMatch(/LOG_LEVEL/);
  });

  it('requires keys and a database in production', async () => {
    const service = run({ NODE_ENV: 'production', DATA_DIR: scratchDir() });
    expect(await service.exited).toBe(1);
    for (const name of ['DEVICE_JWT_SECRET', 'CUSTOMER_JWT_SECRET', 'SECRET_PEPPER', 'DATABASE_URL']) {
      expect(service.output()).toContain(name);
    }
  });
});

describe('LOG_FORMAT=pretty: lines for people', () => {
  it('writes coloured one-line entries with the context, not JSON', async () => {
    const database = await createTestDatabase();
    const port = await freePort();
    const service = run({ LOG_FORMAT: 'pretty', DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: scratchDir() });
    try {
      await waitFor(() => service.output().includes('listening'), 60_000, 'the service to listen');
      await fetch(`http://127.0.0.1:${port}/api/v1/no-such-route`);
      await waitFor(() => service.output().includes('request completed'), 5000, 'the request line');
      const output = service.output();
      const escape = String.fromCharCode(0x1b);
      const started = output.split('\n').find((line) => line.includes('Device Cloud Service listening'));
      // Time, the level in green, the context and message in cyan (ANSI colours).
      expect(started).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] /);
      expect(started).toContain(`${escape}[32mINFO${escape}[39m: ${escape}[36m[Main] Device Cloud Service listening`);
      expect(output).toMatch(/INFO.*request completed/);
      expect(output.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
      await database.drop();
    }
  }, 90_000);
});

describe('npm start without DATABASE_URL', () => {
  const dataDir = scratchDir();
  let port: number;
  let pgPort: number;
  let service: Running;
  const registration = { deviceId: 'gw-process-1', hardwareId: 'esp32-proc', firmwareVersion: '0.1.4', claimCode: 'PROC-CODE-ABCD' };
  let deviceSecret = '';

  beforeAll(async () => {
    port = await freePort();
    pgPort = await freePort();
    service = run({ PORT: String(port), DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(pgPort), HOST: '127.0.0.1' });
    await waitFor(() => service.output().includes('listening'), 90_000, 'the service to listen');
  }, 120_000);

  afterAll(async () => {
    if (service.child.exitCode === null) {
      service.child.kill('SIGKILL');
      await service.exited;
    }
    stopLeftoverPostgres(dataDir);
  });

  it('runs on the Node 24 the project brings (devDependency node), says so in its start line, and the Dockerfile builds on Node 24', () => {
    const pinned = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies.node;
    expect(pinned).toMatch(/^24\.\d+\.\d+$/);
    // npm test runs on that Node (node_modules/.bin first on the PATH), and so does the service it starts.
    expect(process.version).toBe(`v${pinned}`);
    const started = service.output().split('\n').find((line) => line.includes('listening'));
    expect(JSON.parse(started!)).toMatchObject({ node: `v${pinned}` });
    expect(readFileSync(join(root, 'Dockerfile'), 'utf8')).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
  });

  it("runs with npm start's Node flags and allocator settings, and the Dockerfile starts the service with the same ones", () => {
    const { nodeFlags: flags, env } = serviceStart(root);
    expect(flags).toEqual(expect.arrayContaining([expect.stringMatching(/^--max-semi-space-size=\d+$/), expect.stringMatching(/^--heap-growing-percent=\d+$/)]));
    expect(env).toEqual({ MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' });
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile);
    expect(cmd).not.toBeNull();
    expect(JSON.parse(cmd![1])).toEqual(['node', ...flags, 'dist/src/main.js']);
    // The runtime stage's ENV block (the last one) sets the same allocator settings.
    const runtimeEnv = dockerfile.slice(dockerfile.lastIndexOf('\nENV ')).split(/\n(?!\s)/)[1];
    for (const [name, value] of Object.entries(env)) expect(runtimeEnv).toMatch(new RegExp(`\\b${name}=${value}\\b`));
  });

  it('tunes its embedded PostgreSQL: a quarter of the memory for shared buffers (128 MB to 2 GB), fsync on', async () => {
    const password = readFileSync(join(dataDir, 'postgres-password'), 'utf8').trim();
    const db = new pg.Client({ connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/postgres` });
    await db.connect();
    try {
      const { rows } = await db.query<{ name: string; setting: string; unit: string | null }>(
        "SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', 'fsync') ORDER BY name",
      );
      const expectedMb = Math.min(2048, Math.max(128, Math.floor(totalmem() / 4 / 1024 / 1024)));
      expect(rows).toEqual([
        { name: 'fsync', setting: 'on', unit: null },
        { name: 'shared_buffers', setting: String((expectedMb * 1024) / 8), unit: '8kB' },
      ]);
    } finally {
      await db.end();
    }
  });

  it('serves Swagger UI and the OpenAPI document', async () => {
    const page = await fetch(`http://127.0.0.1:${port}/docs`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('swagger');
    const document = await fetch(`http://127.0.0.1:${port}/docs/openapi.json`);
    expect(((await document.json()) as { openapi: string }).openapi).toBe('3.1.0');
  });

  it('registers a device on its embedded PostgreSQL and keeps secrets out of the log', async () => {
    const api = createClient<paths>({ baseUrl: `http://127.0.0.1:${port}` });
    const { data, response } = await api.POST('/api/v1/device/register', { body: registration });
    expect(response.status).toBe(201);
    deviceSecret = data!.deviceSecret;
    const login = await api.POST('/api/v1/device/login', { body: { deviceId: registration.deviceId, deviceSecret } });
    expect(login.response.status).toBe(200);
    const log = service.output();
    expect(log).toContain('/api/v1/device/register');
    for (const secret of [deviceSecret, data!.accessToken, data!.refreshToken, registration.claimCode, login.data!.accessToken]) {
      expect(log).not.toContain(secret);
    }
  });

  it('writes one format: every line, its own start-up lines and the request lines alike, is a JSON line with the same fields', () => {
    const lines = service.output().split('\n').filter((line) => line !== '');
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const line of parsed) {
      expect(line).toEqual(expect.objectContaining({ level: expect.any(Number), time: expect.any(Number), pid: service.child.pid, msg: expect.any(String) }));
    }
    const messages = parsed.map((line) => line.msg);
    expect(messages).toEqual(expect.arrayContaining(['No DATABASE_URL: starting embedded PostgreSQL', 'Device Cloud Service listening', 'request completed']));
  });

  it('shuts down on SIGTERM, stopping the embedded database', async () => {
    const started = Date.now();
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(await portAccepts(pgPort)).toBe(false);
  }, 30_000);

  it('keeps devices and keys across a restart', async () => {
    service = run({ PORT: String(port), DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(pgPort), HOST: '127.0.0.1' });
    await waitFor(() => service.output().includes('listening'), 90_000, 'the restarted service to listen');
    const api = createClient<paths>({ baseUrl: `http://127.0.0.1:${port}` });
    const login = await api.POST('/api/v1/device/login', { body: { deviceId: registration.deviceId, deviceSecret } });
    expect(login.response.status).toBe(200);
    service.child.kill('SIGINT');
    expect(await service.exited).toBe(0);
  }, 120_000);
});

describe('Ctrl-C in the terminal that runs npm start', () => {
  const dataDir = scratchDir();
  let service: Running | undefined;

  afterAll(async () => {
    await killService(service);
    stopLeftoverPostgres(dataDir);
  });

  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it('stops within seconds with exit 0: the app closes its database connections first, then its embedded PostgreSQL, which is gone afterwards', async () => {
    const port = await freePort();
    const pgPort = await freePort();
    // A terminal runs the command as a process group and sends SIGINT to all of it on Ctrl-C.
    service = runService(main, { PORT: String(port), DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(pgPort), HOST: '127.0.0.1' }, { ownProcessGroup: true });
    await waitFor(() => service!.output().includes('listening'), 90_000, 'the service to listen');
    await waitUntilReady(port);
    // Requests that keep pool connections open when the signal comes.
    for (let i = 0; i < 5; i++) expect((await httpCall(port, { path: '/api/v1/users/me' })).status).toBe(401);
    const postmaster = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(alive(postmaster)).toBe(true);

    const before = service.output().length;
    const pressed = Date.now();
    process.kill(-service.child.pid!, 'SIGINT');
    expect(await service.exited).toBe(0);
    const took = Date.now() - pressed;

    // Nothing at warn level or above while stopping: with PostgreSQL stopped under it, every pool
    // and the job queue log lost connections (57P01, then ECONNREFUSED) and wait out their retries.
    const complaints = service
      .output()
      .slice(before)
      .split('\n')
      .filter((line) => /"level":(40|50|60|"warn"|"error"|"fatal")/.test(line));
    expect(complaints).toEqual([]);
    process.stdout.write(`Ctrl-C to exit: ${took} ms\n`);
    // SHUTDOWN_DELAY_MS (2 s) of readiness down, then the close.
    expect(took).toBeLessThan(6000);
    expect(alive(postmaster)).toBe(false);
    expect(await portAccepts(pgPort)).toBe(false);
  }, 120_000);
});

describe('main.js started while its PostgreSQL is down', () => {
  let postgres: StoppablePostgres;
  let port: number;
  let service: Running;
  const admin = { email: 'ops@example.com', password: 'start-while-down-1' };
  const figures: Record<string, number> = {};

  beforeAll(async () => {
    postgres = await stoppablePostgres();
    await postgres.createDatabase('device_cloud');
    await postgres.stop();
    port = await freePort();
    service = run({
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: scratchDir(),
      DATABASE_URL: postgres.url('device_cloud'),
      ADMIN_EMAIL: admin.email,
      ADMIN_PASSWORD: admin.password,
    });
    await waitFor(() => service.output().includes('listening') || service.child.exitCode !== null, 60_000, 'the service to listen');
  }, 120_000);

  afterAll(async () => {
    if (service?.child.exitCode === null) {
      service.child.kill('SIGKILL');
      await service.exited;
    }
    await postgres?.remove();
    process.stdout.write(`start while the database is down, figures (ms): ${JSON.stringify(figures)}\n`);
  }, 60_000);

  const base = () => `http://127.0.0.1:${port}`;
  const register = () =>
    fetch(`${base()}/api/v1/device/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ deviceId: 'gw-started-early', hardwareId: 'hw-early', firmwareVersion: '0.1.4', claimCode: 'EARL-YSTA-RTED' }),
      signal: AbortSignal.timeout(10_000),
    });

  it('listens: live 200, ready 503, and requests that need the database a quick 503 problem with Retry-After', async () => {
    expect(service.child.exitCode).toBeNull();
    expect((await fetch(`${base()}/health/live`)).status).toBe(200);
    const ready = await fetch(`${base()}/health/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { code: string }).code).toBe('SERVICE_UNAVAILABLE');

    const started = performance.now();
    const refused = await register();
    figures.first503 = Math.round(performance.now() - started);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(((await refused.json()) as { code: string }).code).toBe('SERVICE_UNAVAILABLE');
    expect(figures.first503).toBeLessThan(5000);
  });

  it('migrates, runs its start-up tasks and becomes ready within 30 s of PostgreSQL starting, without a restart', async () => {
    await postgres.start();
    const back = performance.now();
    let ready = 0;
    while (ready !== 200 && performance.now() - back < 30_000) {
      await new Promise((done) => setTimeout(done, 100));
      ready = (await fetch(`${base()}/health/ready`)).status;
    }
    figures.readyAfterDatabaseStarted = Math.round(performance.now() - back);
    expect(ready).toBe(200);

    const db = new pg.Client({ connectionString: postgres.url('device_cloud') });
    await db.connect();
    try {
      const { rows } = await db.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY id');
      expect(rows.map((row) => row.name)).toEqual(MIGRATIONS.map((migration) => migration.name));
      // The start-up compaction job waits for the job queue, however late the database came up.
      await eventually(async () => {
        const { rows: jobs } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${JOBS_SCHEMA}.job WHERE name = $1`, [COMPACTION_QUEUE]);
        // At least: the hourly job joins it should the hour turn meanwhile.
        expect(jobs[0].n).toBeGreaterThanOrEqual(1);
      }, 10_000);
    } finally {
      await db.end();
    }
    expect((await register()).status).toBe(201);
    const login = await fetch(`${base()}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(admin) });
    expect(login.status).toBe(200);
  }, 60_000);

  it('never logs the database password, and stops on SIGTERM', async () => {
    const password = decodeURIComponent(new URL(postgres.url('device_cloud')).password);
    expect(password.length).toBeGreaterThan(8);
    expect(service.output()).not.toContain(password);
    expect(service.output()).toContain('Database available');
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  }, 30_000);
});
