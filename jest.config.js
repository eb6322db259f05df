import { availableParallelism } from 'node:os';

/** Jest in native ESM mode (NestJS 12 ships ESM only); TypeScript compiled by swc with decorator metadata. */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      target: 'es2022',
      keepClassNames: true,
      // `with { type: 'json' }` reaches Jest's loader, which requires it of a JSON import (as Node does).
      experimental: { keepImportAttributes: true },
    },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

/**
 * ESM-only packages that CommonJS dependencies require(): Node 20 allows that (require(esm)) but
 * Jest's module loader does not before Node 24.9, so Jest compiles these few to CommonJS.
 */
const esmRequiredFromCjs = ['content-disposition', 'cookie'];
const toCommonJs = ['@swc/jest', { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } }];

const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    // The client package (clients/typescript) as its source, as tsconfig.json's paths: no build before a test.
    '^@device-cloud/client$': '<rootDir>/clients/typescript/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    [`node_modules/(${esmRequiredFromCjs.join('|')})/.+\\.js$`]: toCommonJs,
    '^.+\\.ts$': swc,
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmRequiredFromCjs.join('|')})/)`],
};

/**
 * One worker more than there are cores: many files spend seconds waiting — on a child process
 * starting, a socket kept idle, a retry's backoff, a mail slot — and a third worker on two cores
 * uses that time (on 2 vCPUs the CPUs went from 161 % to 180 % busy). Capped so a large machine
 * does not exhaust the test server's connections.
 */
const maxWorkers = Math.min(availableParallelism() + 1, 8);

/**
 * Jest's ESM mode keeps some of every test file's modules alive in its worker: measured, a worker's
 * heap grew by ~14 MB a file, to 2 GB by the end of the suite, and each garbage collection (and the
 * forced ones of the memory tests) walked all of it. A worker past this after a file is replaced.
 */
const workerIdleMemoryLimit = '600MB';

export default {
  maxWorkers,
  workerIdleMemoryLimit,
  testSequencer: './test/support/slow-first-sequencer.js',
  globalSetup: './test/support/global-setup.ts',
  globalTeardown: './test/support/global-teardown.ts',
  testTimeout: 60_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/lint/**/*.spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
  ],
};
