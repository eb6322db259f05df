import { readFileSync } from 'node:fs';

const ROOT = new URL('../..', import.meta.url).pathname;

interface MediaType {
  schema?: { allOf?: { properties?: { code?: { enum?: string[] } } }[] };
  examples?: Record<string, unknown>;
}
interface OpenApi {
  paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, MediaType> }> }>>;
  components: { schemas: { ProblemCode: { enum: string[] } }; examples?: Record<string, unknown> };
}

/**
 * Every problem code openapi.json documents, with the statuses it is listed under: the ProblemCode
 * enum, and per operation and status the code enum narrowing ProblemResponse and one example per code.
 */
function documentedCodes(document: OpenApi): Map<string, Set<string>> {
  const codes = new Map<string, Set<string>>(document.components.schemas.ProblemCode.enum.map((code) => [code, new Set<string>()]));
  const add = (code: string, status?: string) => {
    const statuses = codes.get(code) ?? new Set<string>();
    if (status) statuses.add(status);
    codes.set(code, statuses);
  };
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const problem = response.content?.['application/problem+json'];
        if (!problem) continue;
        for (const part of problem.schema?.allOf ?? []) for (const code of part.properties?.code?.enum ?? []) add(code, status);
        for (const code of Object.keys(problem.examples ?? {})) add(code, status);
      }
    }
  }
  for (const name of Object.keys(document.components.examples ?? {})) {
    const match = /^problem-(\d{3})-([A-Z0-9_]+)$/.exec(name);
    if (match) add(match[2], match[1]);
  }
  return codes;
}

/** The rows of the table under docs/api.md's "## Error codes": code → the statuses its row names. */
function listedCodes(markdown: string): Map<string, Set<string>> {
  const section = /^## Error codes\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(markdown);
  if (!section) throw new Error('docs/api.md has no "## Error codes" section');
  const codes = new Map<string, Set<string>>();
  for (const line of section[1].split('\n')) {
    const row = /^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/.exec(line);
    if (row) codes.set(row[1], new Set(row[2].match(/\b\d{3}\b/g) ?? []));
  }
  return codes;
}

const sorted = (codes: Iterable<string>) => [...codes].sort();

describe('docs/api.md lists the problem codes of openapi.json', () => {
  const documented = documentedCodes(JSON.parse(readFileSync(`${ROOT}openapi.json`, 'utf8')) as OpenApi);
  const listed = listedCodes(readFileSync(`${ROOT}docs/api.md`, 'utf8'));

  it('finds the codes in both', () => {
    expect(documented.size).toBeGreaterThan(30);
    expect(listed.size).toBeGreaterThan(30);
  });

  it('lists every code openapi.json documents, and no other', () => {
    expect({ missingFromApiMd: sorted([...documented.keys()].filter((code) => !listed.has(code))) }).toEqual({ missingFromApiMd: [] });
    expect({ notInOpenApi: sorted([...listed.keys()].filter((code) => !documented.has(code))) }).toEqual({ notInOpenApi: [] });
  });

  it('gives each code every status openapi.json answers it with', () => {
    const missing = [...documented].flatMap(([code, statuses]) => [...statuses].filter((status) => !listed.get(code)?.has(status)).map((status) => `${code} ${status}`));

    expect(sorted(missing)).toEqual([]);
  });

  it('reads a code table as planted', () => {
    const planted = '# API\n\n## Error codes\n\n| Code | Status | When |\n| --- | --- | --- |\n| `NOT_FOUND` | `404` | x |\n| `RATE_LIMITED` | `429` | y |\n\n## Next\n\n| `FORBIDDEN` | `403` | elsewhere |\n';

    expect(listedCodes(planted)).toEqual(new Map([['NOT_FOUND', new Set(['404'])], ['RATE_LIMITED', new Set(['429'])]]));
  });
});
