import { readFileSync } from 'node:fs';
import { Env } from '../../src/config/env.js';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Every variable src/config/env.ts declares: the properties of the Env class. */
function declaredVariables(): string[] {
  const source = readFileSync(`${ROOT}src/config/env.ts`, 'utf8');
  return [...source.matchAll(/^ {2}([A-Z][A-Z0-9_]+)\??(?::| =)/gm)].map(([, name]) => name).sort();
}

interface Row {
  names: string[];
  default: string;
}

/** The rows of the table under docs/operations.md's "## Configuration". */
function documentedRows(markdown: string): Row[] {
  const section = /^## Configuration\n([\s\S]*?)(?=^## )/m.exec(markdown);
  if (!section) throw new Error('docs/operations.md has no "## Configuration" section');
  return section[1]
    .split('\n')
    .map((line) => /^\| (`[A-Z][^|]*) \| ([^|]*) \|/.exec(line))
    .filter((row) => row !== null)
    .map(([, names, defaultCell]) => ({ names: [...names.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map(([, name]) => name), default: defaultCell.trim() }));
}

describe("docs/operations.md's configuration table", () => {
  const rows = documentedRows(readFileSync(`${ROOT}docs/operations.md`, 'utf8'));
  const documented = rows.flatMap((row) => row.names).sort();
  const declared = declaredVariables();

  it('names every variable of src/config/env.ts, and no other', () => {
    expect(declared.length).toBeGreaterThan(50);
    expect({ notDocumented: declared.filter((name) => !documented.includes(name)), notDeclared: documented.filter((name) => !declared.includes(name)) }).toEqual({
      notDocumented: [],
      notDeclared: [],
    });
  });

  it('gives the defaults env.ts gives', () => {
    const defaults = new Env() as unknown as Record<string, unknown>;
    const wrong = rows
      .filter((row) => row.names.length === 1)
      .flatMap(({ names: [name], default: cell }) => {
        const literal = /^`([^`]*)`$/.exec(cell);
        if (literal) return String(defaults[name]) === literal[1] ? [] : [`${name}: documented ${literal[1]}, env.ts ${String(defaults[name])}`];
        if (cell === 'unset') return defaults[name] === undefined ? [] : [`${name}: documented unset, env.ts ${String(defaults[name])}`];
        return [];
      });

    expect(wrong).toEqual([]);
  });
});
