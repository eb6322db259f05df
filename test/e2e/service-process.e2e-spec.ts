import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import createClient from 'openapi-fetch';
import type { paths } from '../client/schema.js';

/**
 * The service as an operator runs it: the compiled main.js with no DATABASE_URL, so it starts its
 * own embedded PostgreSQL under DATA_DIR. Covers `npm start` on a fresh machine, configuration
 * errors, data surviving a restart and graceful shutdown on SIGTERM.
 */
const root = resolve(import.meta.dirname, '../..');
const outDir = join(root, 'test-output', 'service-process-dist');
const main = join(outDir, 'src', 'main.js');

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function run(env: Record<string, string>): Running {
  const child = spawn(process.execPath, [main], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

async function portAccepts(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

/** Service data directories go under test-output/ (ignored by git), not the system temp folder. */
function scratchDir(): string {
  const parent = join(root, 'test-output', 'service-process');
  mkdirSync(parent, { recursive: true });
  return mkdtempSync(join(parent, 'data-'));
}

/** A failed test may leave the service's PostgreSQL running: never leave it behind. */
function stopLeftoverPostgres(dataDir: string): void {
  const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  try {
    process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGINT');
  } catch {
    // already gone
  }
}

beforeAll(() => {
  execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: root, stdio: 'pipe' });
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
