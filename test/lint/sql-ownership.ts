import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * Table ownership, the boundary lint's twin for data: each table belongs to the module whose
 * infrastructure/ declares its @Entity record, and only that module names it in SQL. Others reach
 * it through the owner's port or a SQL function or view the owner exports by name.
 */

export const ROOT = join(import.meta.dirname, '..', '..');
export const MODULES_DIR = join(ROOT, 'src', 'modules');

/**
 * Tables no @Entity declares: created at run time or by migrations alone. The monthly partitions
 * of `telemetry` (SqlTelemetryPartitionStore) are the telemetry module's.
 */
const MIGRATION_ONLY: Array<{ pattern: RegExp; owner: string }> = [{ pattern: /^telemetry_y\d{4}m\d{2}$/, owner: 'telemetry' }];

export interface Violation {
  module: string;
  file: string;
  table: string;
  owner: string;
}

export const describeViolation = (v: Violation) => `${v.module} ${v.file}: ${v.table} (${v.owner})`;

/** The production TypeScript files under `dir` (no specs, no declarations), sorted. */
export function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

export function moduleNames(): string[] {
  return readdirSync(MODULES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

/** The table names a module's source declares with `@Entity({ name: '…' })` or `@Entity('…')`. */
export function entityTables(source: string): string[] {
  const names: string[] = [];
  for (const match of source.matchAll(/@Entity\(\s*(?:\{[^}]*?\bname:\s*)?['"]([a-z_][a-z0-9_]*)['"]/g)) names.push(match[1]);
  return names;
}

/** Every table's owner, from the records under src/modules/<name>/infrastructure/; a table declared twice throws. */
export function tableOwners(): Map<string, string> {
  const owners = new Map<string, string>();
  for (const module of moduleNames()) {
    let files: string[];
    try {
      files = tsFiles(join(MODULES_DIR, module, 'infrastructure'));
    } catch {
      continue;
    }
    for (const file of files) {
      for (const table of entityTables(readFileSync(file, 'utf8'))) {
        const earlier = owners.get(table);
        if (earlier && earlier !== module) throw new Error(`table ${table} is declared by ${earlier} and ${module}`);
        owners.set(table, module);
      }
    }
  }
  return owners;
}

export function ownerOf(table: string, owners: Map<string, string>): string | undefined {
  return owners.get(table) ?? MIGRATION_ONLY.find(({ pattern }) => pattern.test(table))?.owner;
}

/** TypeORM query-builder methods whose first argument may be a table's name. */
const BUILDER_METHODS = new Set(['from', 'into', 'update', 'innerJoin', 'leftJoin', 'innerJoinAndSelect', 'leftJoinAndSelect', 'innerJoinAndMapOne', 'leftJoinAndMapOne']);

/** What a file says that may name tables. */
export interface Literals {
  /**
   * The text of every string and template literal, as SQL would be assembled from it: a `${name}`
   * whose name is a string constant of the same file is replaced by the constant's text (SQL built
   * from constants), any other substitution by a blank. Comments are not literals.
   */
  texts: string[];
  /** Plain string literals (not property names), whole: a table name kept in a constant or a list. */
  bare: string[];
  /** The string first arguments of query-builder calls (`.innerJoin('devices', 'd', …)`). */
  builderTables: string[];
}

export function literalsOf(source: string, fileName = 'planted.ts'): Literals {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const constants = new Map<string, ts.Expression>();
  const collect = (node: ts.Node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && (ts.isStringLiteral(node.initializer) || ts.isTemplateLiteral(node.initializer))) {
      constants.set(node.name.text, node.initializer);
    }
    ts.forEachChild(node, collect);
  };
  collect(file);

  const textOf = (node: ts.Expression, depth: number): string => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (ts.isTemplateExpression(node)) {
      return node.head.text + node.templateSpans.map((span) => ` ${substitution(span.expression, depth)} ${span.literal.text}`).join('');
    }
    return ' ';
  };
  const substitution = (expression: ts.Expression, depth: number): string => {
    const constant = ts.isIdentifier(expression) ? constants.get(expression.text) : undefined;
    return constant && depth < 5 ? textOf(constant, depth + 1) : ' ';
  };

  const literals: Literals = { texts: [], bare: [], builderTables: [] };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return;
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && BUILDER_METHODS.has(node.expression.name.text)) {
      const [first] = node.arguments;
      if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) literals.builderTables.push(first.text);
    }
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      literals.texts.push(node.text);
      const parent = node.parent;
      const isName = (ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent) || ts.isPropertySignature(parent) || ts.isMethodDeclaration(parent)) && parent.name === node;
      if (!isName) literals.bare.push(node.text);
      return;
    }
    if (ts.isTemplateExpression(node)) {
      literals.texts.push(textOf(node, 0));
      node.templateSpans.forEach((span) => visit(span.expression));
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return literals;
}

const IDENTIFIER = String.raw`"?([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_])"?`;
/**
 * A table reference in SQL: the name after FROM, JOIN, INTO, UPDATE, TABLE, REFERENCES or
 * TRUNCATE (keywords in capitals, as this code base writes SQL: a lower-case "from devices" is
 * prose), optionally ONLY/LATERAL/IF [NOT] EXISTS and a schema; FROM's comma-separated list too.
 * A name followed at once by `(` is a function call; one followed by `.` and a name is a column.
 */
const REFERENCE = new RegExp(String.raw`\b(FROM|JOIN|INTO|UPDATE|TABLE|REFERENCES|TRUNCATE)\s+(?:(?:ONLY|LATERAL|IF\s+NOT\s+EXISTS|IF\s+EXISTS)\s+)?(?:public\.)?${IDENTIFIER}(?!\(|\.[A-Za-z_"])`, 'g');
const LIST_ITEM = new RegExp(String.raw`^(?:\s+(?:AS\s+)?[A-Za-z_][A-Za-z0-9_]*)?\s*,\s*(?:ONLY\s+)?(?:public\.)?${IDENTIFIER}(?!\(|\.[A-Za-z_"])`);
const NOT_ALIASES = new Set(['WHERE', 'JOIN', 'LEFT', 'RIGHT', 'INNER', 'FULL', 'CROSS', 'ON', 'GROUP', 'ORDER', 'LIMIT', 'UNION', 'SET', 'USING', 'RETURNING', 'FOR', 'WINDOW', 'HAVING']);

/** The names a SQL text uses as tables. */
export function tablesNamedIn(text: string): string[] {
  const names: string[] = [];
  for (const match of text.matchAll(REFERENCE)) {
    names.push(match[2]);
    if (match[1] !== 'FROM') continue;
    let rest = text.slice(match.index + match[0].length);
    for (;;) {
      const item = LIST_ITEM.exec(rest);
      if (!item) break;
      const alias = /^\s+(?:AS\s+)?([A-Za-z_][A-Za-z0-9_]*)/.exec(rest)?.[1];
      if (alias && NOT_ALIASES.has(alias)) break;
      names.push(item[1]);
      rest = rest.slice(item[0].length);
    }
  }
  return names;
}

/** A SQL statement, in capitals as this code base writes them. */
const STATEMENT = /\b(?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|WITH|CREATE|ALTER|DROP|TRUNCATE|LOCK)\b/;

/**
 * Where the source of `file` (in module `module`) names in SQL a table another module owns: in a
 * SQL text, as a query builder's table, or — in a file that holds SQL — as a whole string (a table
 * name kept in a constant or a list and substituted later).
 */
export function violationsIn(module: string, file: string, source: string, owners: Map<string, string>): Violation[] {
  const literals = literalsOf(source, file);
  const named = literals.texts.flatMap(tablesNamedIn);
  named.push(...literals.builderTables);
  if (literals.builderTables.length > 0 || literals.texts.some((text) => STATEMENT.test(text))) named.push(...literals.bare);
  const found = new Map<string, Violation>();
  for (const table of named) {
    const owner = ownerOf(table, owners);
    if (owner && owner !== module) found.set(table, { module, file, table, owner });
  }
  return [...found.values()].sort((a, b) => a.table.localeCompare(b.table));
}

/** Every violation in src/modules today. */
export function allViolations(owners = tableOwners()): Violation[] {
  const violations: Violation[] = [];
  for (const module of moduleNames()) {
    for (const path of tsFiles(join(MODULES_DIR, module))) {
      violations.push(...violationsIn(module, relative(ROOT, path), readFileSync(path, 'utf8'), owners));
    }
  }
  return violations;
}

/** Where a file outside infrastructure/ holds SQL: a statement in a literal, or a query builder's table. */
export function sqlOutsideInfrastructure(file: string, source: string): boolean {
  if (/\/infrastructure\//.test(file)) return false;
  const literals = literalsOf(source, file);
  return literals.builderTables.length > 0 || literals.texts.some((text) => STATEMENT.test(text) && /\b(?:FROM|INTO|SET|VALUES|RETURNING|TABLE)\b/.test(text));
}

/** Every production file under src/modules with SQL outside its module's infrastructure/. */
export function filesWithSqlOutsideInfrastructure(): string[] {
  return moduleNames()
    .flatMap((module) => tsFiles(join(MODULES_DIR, module)))
    .map((path) => relative(ROOT, path))
    .filter((file) => sqlOutsideInfrastructure(file, readFileSync(join(ROOT, file), 'utf8')));
}
