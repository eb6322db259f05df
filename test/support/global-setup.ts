import { mkdtempSync } from 'node:fs';
import Module from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
 * One real PostgreSQL for the whole run: TEST_DATABASE_URL when set, else an embedded server in a
 * temporary directory. Each test file then creates its own database on it.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.TEST_DATABASE_URL) return;
  resolveTsSources();
  const { startEmbeddedPostgres } = await import('../../src/shared/database/embedded-postgres.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'dcs-test-pg-'));
  const handle: EmbeddedPostgresHandle = await startEmbeddedPostgres({ dataDir, port: await freePort(), persistent: false });
  process.env.TEST_DATABASE_URL = handle.url('postgres');
  (globalThis as { __embeddedPostgres?: EmbeddedPostgresHandle; __embeddedPostgresDir?: string }).__embeddedPostgres = handle;
  (globalThis as { __embeddedPostgresDir?: string }).__embeddedPostgresDir = dataDir;
}
