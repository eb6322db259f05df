import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { connect, createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { serviceStart } from '../../bench/servers.js';
import { eventually } from './eventually.js';
import { serviceBuildPaths } from './service-build.js';

/**
 * The service as an operator runs it: the compiled main.js as a child process. For tests about
 * what only a real process shows: start-up, signals, restarts, sockets.
 */
export const root = resolve(import.meta.dirname, '../..');

const execFileAsync = promisify(execFile);

/**
 * The service compiled once per test run and the path of its main.js. The run's folder for it
 * (TEST_SERVICE_BUILD_DIR, named by the global setup, removed by its teardown) doubles as the
 * lock: the file that makes it compiles into it; files asking meanwhile (they run in parallel)
 * wait for its mark of a finished build, so none reads a half-written one. A compile takes ~13 s
 * of CPU: once a run instead of once a file. With TEST_SERVICE_PREBUILT the global setup has put
 * a finished build there already.
 */
export async function buildService(): Promise<string> {
  const buildDir = process.env.TEST_SERVICE_BUILD_DIR;
  if (!buildDir) throw new Error('TEST_SERVICE_BUILD_DIR is not set: the Jest global setup should have named it');
  const { outDir, built, failed } = serviceBuildPaths(buildDir);
  if (claim(buildDir)) {
    try {
      await execFileAsync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: root });
      writeFileSync(built, '');
    } catch (error) {
      writeFileSync(failed, '');
      throw error;
    }
  } else {
    await eventually(() => {
      if (!existsSync(built) && !existsSync(failed)) throw new Error(`no build of the service in ${outDir} yet`);
    }, 100_000);
    if (existsSync(failed)) throw new Error('the build of the service for this run failed in another test file');
  }
  return join(outDir, 'src', 'main.js');
}

/** Whether this process made `dir` (mkdir is atomic: of processes racing, one wins). */
function claim(dir: string): boolean {
  try {
    mkdirSync(dir);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => done(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export interface RunOptions {
  /**
   * The service leads a process group of its own, as a command started in a terminal does: a
   * signal to `-pid` reaches every process of that group, as Ctrl-C does.
   */
  ownProcessGroup?: boolean;
}

/** Starts main.js as npm start does (its settings and Node flags), with only PATH, HOME and `env` besides. */
export function runService(main: string, env: Record<string, string>, options: RunOptions = {}): Running {
  const start = serviceStart(root);
  const child = spawn(process.execPath, [...start.nodeFlags, main], {
    cwd: root,
    detached: options.ownProcessGroup ?? false,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...start.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

/** Starts main.js and waits until it listens; fails with its output if it does not within the time. */
export async function startService(main: string, env: Record<string, string>, timeoutMs = 90_000): Promise<Running> {
  const service = runService(main, env);
  const listening = () => service.output().includes('listening');
  await Promise.race([
    waitFor(listening, timeoutMs, 'the service to listen'),
    service.exited.then((code) => {
      if (!listening()) throw new Error(`the service exited with ${code} before listening:\n${service.output()}`);
    }),
  ]);
  return service;
}

/** Polls GET /health/ready until it answers 200 (migrations done, database reachable). */
export async function waitUntilReady(port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await httpCall(port, { path: '/health/ready' }).then(
      (answer) => answer.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`/health/ready still answers ${status}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

/** Ends the process if a test left it running. */
export async function killService(service: Running | undefined): Promise<void> {
  if (service && service.child.exitCode === null && service.child.signalCode === null) {
    service.child.kill('SIGKILL');
    await service.exited;
  }
}

export async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

export async function portAccepts(port: number): Promise<boolean> {
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
export function scratchDir(): string {
  const parent = join(root, 'test-output', 'service-process');
  mkdirSync(parent, { recursive: true });
  return mkdtempSync(join(parent, 'data-'));
}

/** A failed test may leave the service's embedded PostgreSQL running: never leave it behind. */
export function stopLeftoverPostgres(dataDir: string): void {
  const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  try {
    process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGINT');
  } catch {
    // already gone
  }
}

export interface HttpAnswer {
  httpVersion: string;
  /** The request went over a kept-alive connection of the agent. */
  reusedSocket: boolean;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface HttpCall {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  agent?: http.Agent;
  /** Set: HTTPS, trusting this certificate. */
  ca?: Buffer;
}

/**
 * One request over node:http (node:https with `ca`), so a test chooses the connection (an Agent
 * with keepAlive, or none) and sees socket errors as they are. Rejects on a connection error,
 * never on a status.
 */
export function httpCall(port: number, call: HttpCall): Promise<HttpAnswer> {
  const payload = call.body === undefined ? undefined : JSON.stringify(call.body);
  const send = call.ca === undefined ? http.request : https.request;
  return new Promise((done, fail) => {
    const request = send(
      {
        host: '127.0.0.1',
        port,
        ca: call.ca,
        method: call.method ?? 'GET',
        path: call.path,
        agent: call.agent,
        headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }), ...call.headers },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => done({ status: response.statusCode ?? 0, headers: response.headers, body, httpVersion: response.httpVersion, reusedSocket: request.reusedSocket }));
        response.on('error', fail);
      },
    );
    request.on('error', fail);
    request.end(payload);
  });
}
