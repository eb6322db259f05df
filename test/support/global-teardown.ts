import type { EmbeddedPostgresHandle } from '../../src/shared/database/embedded-postgres.js';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __embeddedPostgres?: EmbeddedPostgresHandle }).__embeddedPostgres?.stop();
}
