import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Module boundaries, with ESLint's own no-restricted-imports (no resolver needed: every import in
 * src is relative and names its target's path).
 *
 * - A module (src/modules/<name>) reaches another module only through its public surface,
 *   src/modules/<other>/index.ts, and the names of the SQL views and functions it exports,
 *   src/modules/<other>/sql-api.ts (which imports nothing, so it creates no import cycle). Unit
 *   specs are exempt: they wire real services of several modules with in-memory fakes.
 * - src/shared, src/auth, src/config and src/health sit below the modules and import none of them:
 *   auth defines the ports it needs (src/auth/principals.ts) and the modules implement them.
 * - The composition root (src/*.ts, ormconfig.ts) and the metrics (src/metrics) reach modules
 *   through their surfaces only.
 * - Within a module, domain/ and application/ never import infrastructure/: they depend on ports.
 * - Production code never imports test code: the fakes (test/fakes) and helpers stay out of the build.
 * - A fake in test/fakes/<name> stands in for module <name>'s ports: like that module's own code, it
 *   reaches another module only through that module's surface.
 */
export const MODULES_DIR = join(import.meta.dirname, '..', 'src', 'modules');

export function moduleNames(dir = MODULES_DIR) {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

const escape = (name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Flat-config blocks. `alsoRestricted` are no-restricted-imports `paths` entries that must stay in
 * force in src/modules and src/shared (a later block's options replace an earlier block's for the
 * same rule).
 */
export function boundaryConfigs(modules = moduleNames(), alsoRestricted = []) {
  const surfaceOnly = (names) => ({
    regex: `^(?:\\.\\./)+(?:modules/)?(?:${names.map(escape).join('|')})/(?!(?:index|sql-api)\\.js$)`,
    message: "Import another module only from its public surface, src/modules/<name>/index.ts (docs/architecture.md, layers).",
  });
  const noTestCode = { regex: '^(?:\\.\\./)+test/', message: 'Production code never imports test code (test/fakes, test/support); a spec may.' };
  const noInfrastructure = {
    regex: '(?:^|/)infrastructure/',
    message: 'domain/ and application/ depend on ports declared in domain/, never on infrastructure/ (docs/architecture.md, layers).',
  };
  // A later block replaces an earlier one's options for the same files, so the inner layers repeat the module's patterns.
  const moduleBlock = (name, files, extra = []) => ({
    files,
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: alsoRestricted, patterns: [surfaceOnly(modules.filter((other) => other !== name)), noTestCode, ...extra] }],
    },
  });
  return [
    ...modules.map((name) => moduleBlock(name, [`src/modules/${name}/**/*.ts`])),
    ...modules.map((name) => moduleBlock(name, [`src/modules/${name}/domain/**/*.ts`, `src/modules/${name}/application/**/*.ts`], [noInfrastructure])),
    ...modules.map((name) => {
      const others = modules.filter((other) => other !== name);
      return {
        files: [`test/fakes/${name}/**/*.ts`],
        rules: {
          'no-restricted-imports': ['error', { patterns: [{ ...surfaceOnly(others), regex: `(?:^|/)src/modules/(?:${others.map(escape).join('|')})/(?!index\\.js$)` }] }],
        },
      };
    }),
    {
      files: ['test/fakes/shared/**/*.ts'],
      rules: { 'no-restricted-imports': ['error', { patterns: [{ regex: '(?:^|/)src/modules/', message: 'Fakes of src/shared sit below the modules, as src/shared does.' }] }] },
    },
    ...[
      { files: ['src/shared/**/*.ts'], paths: alsoRestricted },
      { files: ['src/auth/**/*.ts', 'src/config/**/*.ts', 'src/health/**/*.ts'], paths: [] },
    ].map(({ files, paths }) => ({
      files,
      ignores: ['**/*.spec.ts'],
      rules: {
        'no-restricted-imports': [
          'error',
          { paths, patterns: [{ regex: '(?:^|/)modules/', message: 'shared, auth, config and health sit below the modules and import none of them; define a port here and implement it in the module.' }, noTestCode] },
        ],
      },
    })),
    {
      files: ['src/*.ts', 'ormconfig.ts', 'src/metrics/**/*.ts'],
      rules: { 'no-restricted-imports': ['error', { paths: alsoRestricted, patterns: [{ ...surfaceOnly(modules), regex: `(?:^|/)modules/(?:${modules.map(escape).join('|')})/(?!index\\.js$)` }, noTestCode] }] },
    },
  ];
}
