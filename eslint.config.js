import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';
import { boundaryConfigs } from './lint/boundaries.js';

/** The Node globals the plain JavaScript config files may use (TypeScript files get them from @types/node). */
const nodeGlobals = {
  process: 'readonly',
  console: 'readonly',
  Buffer: 'readonly',
  URL: 'readonly',
  setTimeout: 'readonly',
  clearTimeout: 'readonly',
};

const noIsOptional = { name: 'class-validator', importNames: ['IsOptional'], message: 'Use @Optional() from src/shared/http/optional.decorator.ts: IsOptional lets null through.' };

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'coverage/', 'clients/typescript/dist/', 'clients/typescript/src/schema.d.ts', '.data/', '.data-bench/', 'test-output/']),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: nodeGlobals },
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: {
        // Type information for the few rules that need it; the project service keeps it to one program.
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // Nest injects through constructor parameter properties: `constructor(private readonly x: X) {}`.
      'no-useless-constructor': 'off',
      '@typescript-eslint/no-empty-function': 'off',
      // Modules, DTOs and abstract ports are classes by design (DI tokens, decorator targets).
      '@typescript-eslint/no-extraneous-class': 'off',
      // A promise nobody awaits loses its error; in a request path that is a silent failure.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      // Not enabled on purpose: consistent-type-imports would turn the value imports that
      // emitDecoratorMetadata needs for constructor injection into type-only imports.
    },
  },
  {
    // Request classes: a property that may be left out is @Optional() (src/shared/http/optional.decorator.ts);
    // class-validator's IsOptional also waves null through every check, which reached parsers as a 500.
    files: ['src/modules/**/*.ts', 'src/shared/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [noIsOptional] }] },
  },
  // Module boundaries (lint/boundaries.js); they repeat the rule above, as a later block's options replace it.
  ...boundaryConfigs(undefined, [noIsOptional]),
);
