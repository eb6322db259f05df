/** Jest in native ESM mode (NestJS 12 ships ESM only); TypeScript compiled by swc with decorator metadata. */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      target: 'es2022',
      keepClassNames: true,
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
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    [`node_modules/(${esmRequiredFromCjs.join('|')})/.+\\.js$`]: toCommonJs,
    '^.+\\.ts$': swc,
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmRequiredFromCjs.join('|')})/)`],
};

export default {
  globalSetup: './test/support/global-setup.ts',
  globalTeardown: './test/support/global-teardown.ts',
  testTimeout: 60_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/lint/**/*.spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
  ],
};
