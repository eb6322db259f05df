import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/shared/database/embedded-postgres.js';
import { freePort } from './service-process.js';

/** A PostgreSQL of a test's own, which it may stop and start again on the same data and port. */
export interface StoppablePostgres {
  port: number;
  url(database: string): string;
  createDatabase(name: string): Promise<void>;
  /** Fast shutdown (SIGINT): open sessions end with 57P01, new connections are refused. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and deletes its data. */
  remove(): Promise<void>;
}

/**
 * Starts an embedded PostgreSQL in its own temporary directory on a free port: not the suite's
 * shared server, so stopping it disturbs no other test file.
 */
export async function stoppablePostgres(): Promise<StoppablePostgres> {
  const dataDir = mkdtempSync(join(tmpdir(), 'dcs-test-pg-own-'));
  const port = await freePort();
  const start = () => startEmbeddedPostgres({ dataDir, port, persistent: true });
  let server: EmbeddedPostgresHandle | null = await start();
  const serverUrl = server.serverUrl;
  const stop = async () => {
    const running = server;
    server = null;
    await running?.stop();
  };
  return {
    port,
    url: (database) => `${serverUrl}/${database}`,
    createDatabase: async (name) => {
      if (!server) throw new Error('the test PostgreSQL is stopped');
      await server.createDatabase(name);
    },
    stop,
    start: async () => {
      server ??= await start();
    },
    remove: async () => {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
