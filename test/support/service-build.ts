import { join } from 'node:path';

/**
 * Where a test run keeps its one build of the service (test/support/service-process.ts): the
 * compiled tree, and the marks of a finished or failed build. Shared with the global setup, which
 * puts a finished build there itself when given one (TEST_SERVICE_PREBUILT).
 */
export function serviceBuildPaths(buildDir: string): { outDir: string; built: string; failed: string } {
  return { outDir: join(buildDir, 'dist'), built: join(buildDir, 'built'), failed: join(buildDir, 'failed') };
}
