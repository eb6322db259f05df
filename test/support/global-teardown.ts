import { rmSync } from 'node:fs';
import type { EmbeddedPostgresHandle } from '../../src/shared/database/embedded-postgres.js';

export default async function globalTeardown(): Promise<void> {
  const state = globalThis as { __embeddedPostgres?: EmbeddedPostgresHandle; __embeddedPostgresDir?: string };
  await state.__embeddedPostgres?.stop();
  if (state.__embeddedPostgresDir) rmSync(state.__embeddedPostgresDir, { recursive: true, force: true });
}
