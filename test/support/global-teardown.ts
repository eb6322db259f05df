import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { EmbeddedPostgresHandle } from '../../src/shared/database/embedded-postgres.js';

/** The run's build of the service (test/support/service-process.ts buildService), its lock and its marks. */
function removeServiceBuild(): void {
  const name = `service-dist-${process.env.TEST_TEMPLATE_DATABASE ?? 'local'}`;
  for (const path of [name, `${name}.lock`, `${name}.failed`]) rmSync(join(process.cwd(), 'test-output', path), { recursive: true, force: true });
}

export default async function globalTeardown(): Promise<void> {
  removeServiceBuild();
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
