import { rmSync } from 'node:fs';
import pg from 'pg';
import type { EmbeddedPostgresHandle } from '../../src/shared/database/embedded-postgres.js';

export default async function globalTeardown(): Promise<void> {
  // The run's build of the service (buildService in test/support/service-process.ts), if a file made one.
  if (process.env.TEST_SERVICE_BUILD_DIR) rmSync(process.env.TEST_SERVICE_BUILD_DIR, { recursive: true, force: true });
  const state = globalThis as { __embeddedPostgres?: EmbeddedPostgresHandle; __embeddedPostgresDir?: string };
  if (state.__embeddedPostgres) {
    await state.__embeddedPostgres.stop();
    if (state.__embeddedPostgresDir) rmSync(state.__embeddedPostgresDir, { recursive: true, force: true });
    return;
  }
  // A server the run was given outlives it: leave it without this run's template.
  const template = process.env.TEST_TEMPLATE_DATABASE;
  if (!template || !process.env.TEST_DATABASE_URL) return;
  const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
