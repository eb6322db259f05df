import { allViolations, describeViolation, filesWithSqlOutsideInfrastructure, ownerOf, sqlOutsideInfrastructure, tableOwners, violationsIn } from './sql-ownership.js';

const owners = tableOwners();

/** What the test reports for a planted file of module `module`. */
const planted = (module: string, source: string) => violationsIn(module, `src/modules/${module}/infrastructure/planted.ts`, source, owners).map(describeViolation);

describe('SQL table ownership', () => {
  it('knows each table by the module whose infrastructure declares its record', () => {
    expect(Object.fromEntries([...owners].filter(([table]) => ['devices', 'users', 'telemetry', 'device_latest_metrics', 'device_events', 'battery_energy_stale', 'device_shares'].includes(table)))).toEqual({
      devices: 'devices',
      users: 'accounts',
      telemetry: 'telemetry',
      device_latest_metrics: 'telemetry',
      device_events: 'events',
      battery_energy_stale: 'batteries',
      device_shares: 'sharing',
    });
    expect(ownerOf('telemetry_y2026m01', owners)).toBe('telemetry');
  });

  it('finds no module naming another module’s table in SQL', () => {
    expect(allViolations(owners).map(describeViolation)).toEqual([]);
  });

  const file = 'src/modules/claims/infrastructure/planted.ts';

  it.each([
    ['SELECT', "const sql = 'SELECT owner_id FROM devices WHERE device_id = $1';"],
    ['across a line break', 'const sql = `SELECT owner_id\n  FROM\n    devices d WHERE d.device_id = $1`;'],
    ['a join', "const sql = 'SELECT a.at FROM claim_audit a JOIN devices d ON d.device_id = a.device_id';"],
    ['a FROM list', "const sql = 'SELECT a.at FROM claim_audit a, devices AS d WHERE d.device_id = a.device_id';"],
    ['an UPDATE', "const sql = 'UPDATE devices SET owner_id = NULL WHERE device_id = $1';"],
    ['an INSERT', 'const sql = `INSERT INTO devices (device_id) VALUES ($1)`;'],
    ['a DELETE', "const sql = 'DELETE FROM ONLY devices WHERE device_id = $1';"],
    ['a quoted, schema-qualified name', `const sql = 'SELECT 1 FROM public."devices" WHERE device_id = $1';`],
    ['a REFERENCES', "const sql = 'ALTER TABLE claim_audit ADD FOREIGN KEY (device_id) REFERENCES devices (device_id)';"],
    ['a fragment in a template', "const owner = (d: string) => `(SELECT owner_id FROM devices WHERE device_id = ${d})`;"],
    ['a name from a constant', "const TABLE = 'devices';\nconst sql = `SELECT owner_id FROM ${TABLE} WHERE device_id = $1`;"],
    ['a name from a list', "for (const table of ['claim_audit', 'devices']) await tx.rows(`DELETE FROM ${table} WHERE at < $1`, [before]);"],
    ['a name chosen in code', "const source = admin ? 'devices' : mine;\nconst sql = `SELECT device_id FROM ${source} d`;"],
    ['a query builder’s join', "manager.createQueryBuilder().select('d.owner_id').from(ClaimAuditRecord, 'a').innerJoin('devices', 'd', 'd.device_id = a.deviceId');"],
  ])('reports a module naming another’s table: %s', (_, source) => {
    expect(planted('claims', source)).toEqual([`claims ${file}: devices (devices)`]);
  });

  it('reports every table of every other owner, once per file', () => {
    const source = [
      "const a = 'SELECT 1 FROM devices d JOIN users u ON u.id = d.owner_id';",
      "const b = 'SELECT 1 FROM devices WHERE device_id = $1';",
      "const c = 'SELECT max(ts) FROM telemetry_y2026m01';",
    ].join('\n');
    expect(planted('claims', source)).toEqual([`claims ${file}: devices (devices)`, `claims ${file}: telemetry_y2026m01 (telemetry)`, `claims ${file}: users (accounts)`]);
  });

  it.each([
    ['its own table', "const sql = 'SELECT device_id FROM claim_audit WHERE device_id = $1';"],
    ['a function another module exports', "const sql = 'SELECT owner_id FROM devices_seen($1::text[], $2)';"],
    ['a view another module exports', "const LATEST = 'telemetry_latest_metrics';\nconst sql = `SELECT value FROM ${LATEST} WHERE device_id = $1`;"],
    ['an exported name substituted', "import { LATEST_METRICS } from '../../telemetry/index.js';\nconst sql = `SELECT value FROM ${LATEST_METRICS} l`;"],
    ['a comment', "// Reads FROM devices, the owner's table.\n/* UPDATE devices */\nconst sql = 'SELECT 1 FROM claim_audit';"],
    ['prose in a message', "throw new Error('no telemetry from devices that were never claimed: update users first');"],
    ['a column named like a table', "const sql = 'SELECT telemetry, alerts, users FROM claim_audit ORDER BY devices';"],
    ['a qualified column', "const sql = 'SELECT EXTRACT(EPOCH FROM telemetry.ts) FROM claim_audit telemetry';"],
    ['a JSON key', "const body = { devices: [], 'users': 1 };\nconst sql = `SELECT json_build_object('devices', 1, 'telemetry', 2) FROM claim_audit`;"],
    ['a word outside SQL', "@ApiTags('devices')\n@Controller('users')\nclass PlantedController { @Get('telemetry') list() { return { alerts: 'webhooks' }; } }"],
    ['a table of no module', "const sql = 'SELECT relname FROM pg_class JOIN pgboss.job ON true';"],
  ])('does not report %s', (_, source) => {
    expect(planted('claims', source)).toEqual([]);
  });

  it('lets the owner name its own table', () => {
    expect(planted('devices', "const sql = 'UPDATE devices SET last_seen_at = $2 WHERE device_id = $1';")).toEqual([]);
  });

  describe('SQL only in infrastructure/', () => {
    it('finds no SQL in the domain/, application/ or http/ files of any module', () => {
      expect(filesWithSqlOutsideInfrastructure()).toEqual([]);
    });

    it.each([
      ['src/modules/audit/application/planted.ts', "await tx.rows('INSERT INTO audit_log (action) VALUES ($1)', [action]);"],
      ['src/modules/events/application/planted.ts', 'const sql = `SELECT id FROM device_events WHERE device_id = $1`;'],
      ['src/modules/sharing/domain/planted.ts', "const sql = 'UPDATE device_shares SET role = $2 WHERE id = $1';"],
      ['src/modules/stream/http/planted.ts', "manager.createQueryBuilder().select('t.id').from('stream_tickets', 't');"],
    ])('reports %s', (file, source) => {
      expect(sqlOutsideInfrastructure(file, source)).toBe(true);
    });

    it.each([
      ['src/modules/audit/infrastructure/planted.ts', "await tx.rows('INSERT INTO audit_log (action) VALUES ($1)', [action]);"],
      ['src/modules/events/application/planted.ts', "throw new Error('Select a device with a claim code, then update it');"],
      ['src/modules/sharing/http/planted.ts', "@ApiOperation({ summary: 'Shares of a device', description: 'WITH care: the list is from the owner.' })"],
    ])('does not report %s', (file, source) => {
      expect(sqlOutsideInfrastructure(file, source)).toBe(false);
    });
  });
});
