import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * The naming rule for ports and their implementations (docs/architecture.md, "Layers"). A port onto
 * the module's own tables is `<Thing>Repository` (loads and saves an aggregate), `<Thing>Queries`
 * (returns read-model rows) or `<Thing>Store` (anything else it persists or reads). An
 * implementation of port P is `SqlP` when it sends SQL text and `TypeOrmP` when it uses TypeORM's
 * API, never both.
 */

const ROOT = join(import.meta.dirname, '..', '..');
/** Where ports and their implementations live: the modules, and the shared kernel's stores (refresh tokens). */
const SOURCE_DIRS = [join(ROOT, 'src', 'modules'), join(ROOT, 'src', 'shared')];

export const PORT_SUFFIX = /(Repository|Queries|Store)$/;

/** Ports a module offers to others, or onto something that is not its own tables: named for what they offer. */
export const EXEMPT_PORTS: Record<string, string> = {
  AccountMailOutbox: 'a mail outbox: the job queue, not a table of the module',
  AuditLog: 'offered to every module that audits a change, inside that change’s transaction',
  DeviceDirectory: 'offered to other modules: what they may know of the devices',
  DeviceReports: 'offered to other modules: what they report about a device',
  DeviceReturns: 'the devices module’s answer to a silent device coming back, offered to telemetry',
  IngestMetrics: 'a metrics sink, not the database',
  LiveBus: 'a message bus (PostgreSQL NOTIFY or Redis)',
  OtaDevices: 'another module’s data (devices), read through its snapshots',
  WebhookSecrets: 'a sealing scheme for secrets, not storage',
  WebhookTransport: 'an HTTP transport',
};

/** Calls that send SQL text: the Sql runner's rows(), a driver's or manager's query(), an injected Sql. */
export const SQL_MARKERS: RegExp[] = [/\.rows\s*[<(]/, /\.query\s*[<(]/, /:\s*Sql\b/, /\bnew Sql\(/];

/** Uses of TypeORM's API: the Orm wrapper, an entity manager or repository, a query builder, an entity instance. */
export const TYPEORM_MARKERS: RegExp[] = [/\bthis\.orm\b/, /:\s*Orm\b/, /\bEntityManager\b/, /\bgetRepository\s*\(/, /\bcreateQueryBuilder\s*\(/, /\bnew \w+Record\(/, /\bmanager\.\w+\s*[<(]/];

export interface Finding {
  file: string;
  name: string;
  problem: string;
}

export const describeFinding = (f: Finding) => `${f.file}: ${f.name} ${f.problem}`;

function classesIn(file: string, source: string): ts.ClassDeclaration[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  return sf.statements.filter((node): node is ts.ClassDeclaration => ts.isClassDeclaration(node) && node.name !== undefined);
}

const isAbstract = (node: ts.ClassDeclaration) => (node.modifiers ?? []).some((m) => m.kind === ts.SyntaxKind.AbstractKeyword);

/** The layer a file is in; the shared kernel's classes are judged as implementations. */
function layerOf(file: string): string | undefined {
  if (file.startsWith('src/shared/')) return 'infrastructure';
  return /^src\/modules\/[^/]+\/(domain|application|infrastructure)\//.exec(file)?.[1];
}

/** `file` relative to the repository root, e.g. src/modules/claims/domain/claim-audit.store.ts. */
export function findingsIn(file: string, source: string): Finding[] {
  const layer = layerOf(file);
  if (!layer) return [];
  const findings: Finding[] = [];
  for (const node of classesIn(file, source)) {
    const name = node.name!.text;
    if (layer !== 'infrastructure') {
      if (isAbstract(node) && !PORT_SUFFIX.test(name) && !(name in EXEMPT_PORTS)) findings.push({ file, name, problem: 'is a port without the suffix Repository, Queries or Store' });
      continue;
    }
    const base = node.heritageClauses?.find((clause) => clause.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression.getText();
    const technology = /^(Sql|TypeOrm)(?=[A-Z])/.exec(name)?.[1];
    if (technology && base && name !== technology + base) findings.push({ file, name, problem: `implements ${base}: name it ${technology}${base}` });
    const text = node.getText();
    const uses = (markers: RegExp[]) => markers.find((marker) => marker.test(text));
    if (name.startsWith('TypeOrm')) {
      const marker = uses(SQL_MARKERS);
      if (marker) findings.push({ file, name, problem: `sends SQL text (${marker.source})` });
    }
    if (/^Sql[A-Z]/.test(name)) {
      const marker = uses(TYPEORM_MARKERS);
      if (marker) findings.push({ file, name, problem: `uses TypeORM (${marker.source})` });
    }
  }
  return findings;
}

function sourceFiles(): string[] {
  return SOURCE_DIRS.flatMap((dir) => readdirSync(dir, { withFileTypes: true, recursive: true }))
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)).split('\\').join('/'))
    .sort();
}

export function allFindings(): Finding[] {
  return sourceFiles().flatMap((file) => findingsIn(file, readFileSync(join(ROOT, file), 'utf8')));
}

/** The abstract classes of the modules' domain/ and application/ folders. */
export function portNames(): string[] {
  return sourceFiles()
    .filter((file) => /^src\/modules\/[^/]+\/(domain|application)\//.test(file))
    .flatMap((file) => classesIn(file, readFileSync(join(ROOT, file), 'utf8')).filter(isAbstract).map((node) => node.name!.text));
}
