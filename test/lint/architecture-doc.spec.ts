import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { moduleNames, MODULES_DIR } from '../../lint/boundaries.js';

const ROOT = new URL('../..', import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** "a → b" for every module a whose production code imports module b's index.ts. */
function importedModules(): string[] {
  const edges = new Set<string>();
  for (const from of moduleNames()) {
    for (const file of sourceFiles(join(MODULES_DIR, from))) {
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
        const target = relative(MODULES_DIR, resolve(dirname(file), specifier)).split('/');
        if (target.length === 2 && target[1] === 'index.js' && target[0] !== from) edges.add(`${from} → ${target[0]}`);
      }
    }
  }
  return [...edges].sort();
}

/** The edges of the first mermaid flowchart in a markdown text; node ids spell a module with _ for -. */
function drawnEdges(markdown: string): string[] {
  const block = /```mermaid\n(flowchart|graph) [A-Z]{2}\n([\s\S]*?)```/.exec(markdown);
  if (!block) throw new Error('no mermaid flowchart');
  const name = (id: string) => id.replaceAll('_', '-');
  const edges = [...block[2].matchAll(/^\s*(\w+)(?:\[[^\]]*\])? --> (\w+)(?:\[[^\]]*\])?\s*$/gm)].map(([, a, b]) => `${name(a)} → ${name(b)}`);
  return [...new Set(edges)].sort();
}

describe("docs/architecture.md's module diagram", () => {
  it('reads a planted diagram', () => {
    expect(drawnEdges('x\n```mermaid\nflowchart LR\n  api_keys[api-keys] --> audit\n  claims --> devices\n```\n')).toEqual(['api-keys → audit', 'claims → devices']);
  });

  it('draws exactly the imports between modules', () => {
    const drawn = drawnEdges(readFileSync(`${ROOT}docs/architecture.md`, 'utf8'));
    const imported = importedModules();

    expect(imported.length).toBeGreaterThan(10);
    expect({ notDrawn: imported.filter((edge) => !drawn.includes(edge)), notImported: drawn.filter((edge) => !imported.includes(edge)) }).toEqual({ notDrawn: [], notImported: [] });
  });
});
