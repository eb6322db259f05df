import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { dataSourceOptions, MIGRATIONS } from '../../src/shared/database/data-source-options.js';
import { AuditLog1764001000000 } from '../../src/shared/database/migrations/1764001000000-audit-log.js';
import { ADMIN_SETTINGS, anAdmin } from '../support/claim-fixtures.js';
import { startTestApp, type TestApp } from '../support/create-test-app.js';
import { createTestDatabase } from '../support/postgres.js';

/**
 * claim_audit rows written before the audit log existed: the successful claims, releases and
 * re-registration windows become audit entries; failed attempts stay in claim_audit only.
 */
describe('migration AuditLog: the ownership history of claim_audit becomes audit entries', () => {
  let database: { url: string; drop: () => Promise<void> };
  let t: TestApp;
  const customer = randomUUID();
  const support = randomUUID();
  const deviceId = `gw-${randomBytes(4).toString('hex')}`;
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 12, minute));

  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
    const before = new DataSource({ ...dataSourceOptions({ url: database.url, poolSize: 1 }), migrations: MIGRATIONS.slice(0, MIGRATIONS.indexOf(AuditLog1764001000000)) });
    await before.initialize();
    await before.runMigrations();
    for (const [id, role] of [
      [customer, 'customer'],
      [support, 'admin'],
    ]) {
      await before.query(`INSERT INTO users (id, email, password_hash, role, email_verified_at, token_version, created_at) VALUES ($1, $2, 'not-a-hash', $3, now(), 1, now())`, [
        id,
        `${id}@example.com`,
        role,
      ]);
    }
    const rows: Array<[number, string, string, string, string]> = [
      [1, customer, 'claim', 'INVALID_CLAIM', '203.0.113.1'],
      [2, customer, 'claim', 'CLAIMED', '203.0.113.2'],
      [3, customer, 'claim', 'ALREADY_OWNED', '203.0.113.3'],
      [4, support, 're-registration', 'RE_REGISTRATION_OPENED', '203.0.113.4'],
      [5, customer, 'release', 'RELEASED', '203.0.113.5'],
      [6, customer, 'claim', 'RATE_LIMITED', '203.0.113.6'],
    ];
    for (const [minute, userId, action, outcome, address] of rows) {
      await before.query('INSERT INTO claim_audit (at, user_id, device_id, action, outcome, client_address) VALUES ($1, $2, $3, $4, $5, $6)', [at(minute), userId, deviceId, action, outcome, address]);
    }
    await before.destroy();
    t = await startTestApp(database.url, ADMIN_SETTINGS);
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  it('copies the claims, releases and re-registration windows, oldest first, with their actor, owner and address', async () => {
    const { rows } = await t.db.query(
      'SELECT at, actor_kind, actor_user_id, action, device_id, owner_id, target, client_address, detail FROM audit_log WHERE device_id = $1 ORDER BY id',
      [deviceId],
    );

    expect(rows).toEqual([
      { at: at(2), actor_kind: 'user', actor_user_id: customer, action: 'device.claimed', device_id: deviceId, owner_id: customer, target: `device:${deviceId}`, client_address: '203.0.113.2', detail: { source: 'claim_audit' } },
      { at: at(4), actor_kind: 'admin', actor_user_id: support, action: 'device.re_registration_opened', device_id: deviceId, owner_id: null, target: `device:${deviceId}`, client_address: '203.0.113.4', detail: { source: 'claim_audit' } },
      { at: at(5), actor_kind: 'user', actor_user_id: customer, action: 'device.released', device_id: deviceId, owner_id: customer, target: `device:${deviceId}`, client_address: '203.0.113.5', detail: { source: 'claim_audit' } },
    ]);
    // claim_audit keeps every attempt.
    expect((await t.db.query('SELECT count(*)::int AS n FROM claim_audit WHERE device_id = $1', [deviceId])).rows[0].n).toBe(6);
  });

  it('lists them to administrators like any entry', async () => {
    const admin = await anAdmin(t);

    const { data } = await t.api.GET('/api/v1/admin/audit', { params: { query: { deviceId } }, headers: admin.headers });

    expect(data!.items.map((entry) => [entry.action, entry.actor.userId, entry.at])).toEqual([
      ['device.released', customer, at(5).toISOString()],
      ['device.re_registration_opened', support, at(4).toISOString()],
      ['device.claimed', customer, at(2).toISOString()],
    ]);
  });
});
