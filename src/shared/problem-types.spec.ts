import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROBLEM_TITLES, problemType } from './problem-types.js';

const SRC = fileURLToPath(new URL('..', import.meta.url));
const UPPER_SNAKE_CASE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Every problem code the source can produce, with the files it appears in. */
function codesInSource(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const add = (code: string, file: string) => found.set(code, (found.get(code) ?? new Set()).add(relative(SRC, file)));

  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/new DomainError\(\s*['"`]([^'"`]*)['"`]/g)) add(match[1], file);

    // Each direct subclass of DomainError must name its code as a literal in super(…).
    const classes = [...text.matchAll(/class (\w+) extends DomainError\b/g)];
    classes.forEach((declaration, i) => {
      const body = text.slice(declaration.index, classes[i + 1]?.index ?? text.length);
      const code = /super\(\s*['"`]([^'"`]*)['"`]/.exec(body)?.[1];
      add(code ?? `<no literal code in ${declaration[1]}>`, file);
    });

    if (file.endsWith('problem-details.filter.ts')) {
      for (const match of text.matchAll(/\bcode: '([^']*)'/g)) add(match[1], file);
      for (const match of text.matchAll(/^\s*\d{3}: '([^']*)'/gm)) add(match[1], file);
      for (const match of text.matchAll(/CODE_OF_STATUS\[\w+\] \?\? '([^']*)'/g)) add(match[1], file);
    }
  }
  return found;
}

describe('problem codes', () => {
  const found = codesInSource();

  it('finds the codes known to exist, so the scan itself works', () => {
    expect([...found.keys()]).toEqual(
      expect.arrayContaining([
        'CLAIM_CODE_REQUIRED',
        'DEVICE_ALREADY_REGISTERED',
        'INVALID_CREDENTIALS',
        'INVALID_TOKEN',
        'VALIDATION_FAILED',
        'RATE_LIMITED',
        'UNAUTHORIZED',
        'NOT_FOUND',
        'UNSUPPORTED_MEDIA_TYPE',
        'INTERNAL_ERROR',
        'SERVICE_UNAVAILABLE',
        'MALFORMED_BODY',
        'PAYLOAD_TOO_LARGE',
        'METHOD_NOT_ALLOWED',
        'FORBIDDEN',
      ]),
    );
  });

  it('gives every code used in the source a title', () => {
    const untitled = [...found].filter(([code]) => !PROBLEM_TITLES[code]).map(([code, files]) => `${code} (${[...files].join(', ')})`);

    expect(untitled).toEqual([]);
  });

  it('spells every code in UPPER_SNAKE_CASE', () => {
    const codes = new Set([...found.keys(), ...Object.keys(PROBLEM_TITLES)]);

    expect([...codes].filter((code) => !UPPER_SNAKE_CASE.test(code))).toEqual([]);
  });

  it('gives every title text', () => {
    expect(Object.entries(PROBLEM_TITLES).filter(([, title]) => title.trim() === '')).toEqual([]);
  });

  it('gives each code its own type URN', () => {
    const codes = Object.keys(PROBLEM_TITLES);
    const types = codes.map(problemType);

    expect(new Set(types).size).toBe(codes.length);
    for (const type of types) expect(type).toMatch(/^urn:device-cloud:problem:[a-z0-9]+(-[a-z0-9]+)*$/);
    expect(problemType('CLAIM_CODE_REQUIRED')).toBe('urn:device-cloud:problem:claim-code-required');
  });
});
