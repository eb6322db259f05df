import { allFindings, describeFinding, EXEMPT_PORTS, findingsIn, portNames } from './port-names.js';

const planted = (file: string, source: string) => findingsIn(file, source).map(describeFinding);

describe('port and implementation names', () => {
  it('finds every port named by the rule and every implementation using what its name says', () => {
    expect(allFindings().map(describeFinding)).toEqual([]);
  });

  it('exempts only ports that exist', () => {
    const ports = new Set(portNames());
    expect(Object.keys(EXEMPT_PORTS).filter((name) => !ports.has(name))).toEqual([]);
  });

  describe('ports', () => {
    it.each([
      ['domain/', 'src/modules/claims/domain/planted.ts'],
      ['application/', 'src/modules/claims/application/planted.ts'],
    ])('reports an abstract class in %s without a port suffix', (_, file) => {
      expect(planted(file, 'export abstract class ClaimLedger {\n  abstract add(): Promise<void>;\n}')).toEqual([`${file}: ClaimLedger is a port without the suffix Repository, Queries or Store`]);
    });

    it.each([['ClaimRepository'], ['ClaimQueries'], ['ClaimStore'], ['DeviceDirectory']])('accepts %s', (name) => {
      expect(planted('src/modules/claims/domain/planted.ts', `export abstract class ${name} {}`)).toEqual([]);
    });

    it('looks at abstract classes only, and only in modules', () => {
      expect(planted('src/modules/claims/domain/planted.ts', 'export class ClaimCode {}')).toEqual([]);
      expect(planted('src/shared/planted.ts', 'export abstract class Mailer {}')).toEqual([]);
    });

    it('judges the shared kernel’s implementations too', () => {
      expect(planted('src/shared/auth-tokens/planted.ts', 'export class TypeOrmTokenStore {\n  run() {\n    return this.sql.rows(`SELECT 1`);\n  }\n}')).toEqual([
        'src/shared/auth-tokens/planted.ts: TypeOrmTokenStore sends SQL text (\\.rows\\s*[<(])',
      ]);
    });
  });

  describe('implementations', () => {
    const file = 'src/modules/claims/infrastructure/planted.ts';

    it.each([
      ['rows()', 'await tx.rows(`DELETE FROM claim_audit WHERE at < $1`, [before]);'],
      ['typed rows()', "const rows = await this.sql.rows<{ n: number }>('SELECT count(*) AS n FROM claim_audit');"],
      ['a manager’s query()', "await manager.query('DELETE FROM claim_audit');"],
      ['an injected Sql', 'constructor(private readonly sql: Sql) {}'],
    ])('reports a TypeOrm class that sends SQL text: %s', (_, body) => {
      const [finding] = planted(file, `export class TypeOrmClaimAuditStore extends ClaimAuditStore {\n  async record() {\n    ${body}\n  }\n}`);
      expect(finding).toMatch(new RegExp(`^${file}: TypeOrmClaimAuditStore sends SQL text`));
    });

    it.each([
      ['the Orm wrapper', 'await this.orm.run((m) => m.clear(ClaimAuditRecord));'],
      ['an injected Orm', 'constructor(private readonly orm: Orm) {}'],
      ['a query builder', 'await ds.createQueryBuilder().delete().from(ClaimAuditRecord).execute();'],
      ['a repository', 'await ds.getRepository(ClaimAuditRecord).clear();'],
      ['an entity manager', 'const run = (manager: EntityManager) => manager.count(ClaimAuditRecord);'],
      ['an entity', 'return Object.assign(new ClaimAuditRecord(), row);'],
    ])('reports a Sql class that uses TypeORM: %s', (_, body) => {
      const [finding] = planted(file, `export class SqlClaimAuditStore extends ClaimAuditStore {\n  async record() {\n    ${body}\n  }\n}`);
      expect(finding).toMatch(new RegExp(`^${file}: SqlClaimAuditStore uses TypeORM`));
    });

    it('reports an implementation not named after its port', () => {
      expect(planted(file, 'export class SqlClaimAudit extends ClaimAuditStore {}')).toEqual([`${file}: SqlClaimAudit implements ClaimAuditStore: name it SqlClaimAuditStore`]);
      expect(planted(file, 'export class SqlClaimAuditStore extends ClaimAuditStore {}')).toEqual([]);
    });

    it('judges each class of a file by its own body', () => {
      const source = [
        'export class SqlClaimAuditStore {\n  run(tx: SqlRunner) {\n    return tx.rows(`SELECT 1`);\n  }\n}',
        'export class TypeOrmClaimAuditStore {\n  constructor(private readonly orm: Orm) {}\n  run() {\n    return this.orm.run((manager) => manager.count(ClaimAuditRecord));\n  }\n}',
      ].join('\n');
      expect(planted(file, source)).toEqual([]);
    });

    it('lets a TypeOrm class hand its transaction to a callback', () => {
      const source = 'export class TypeOrmClaimStore {\n  save(onSaved: (tx: SqlRunner) => Promise<void>) {\n    return this.orm.transaction(async (manager, tx) => {\n      await manager.save(new ClaimRecord());\n      await onSaved(tx);\n    });\n  }\n}';
      expect(planted(file, source)).toEqual([]);
    });
  });
});
