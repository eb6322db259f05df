import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { dataSourceOptions, MIGRATIONS } from '../../src/shared/database/data-source-options.js';
import { Organizations1764002400000 } from '../../src/shared/database/migrations/1764002400000-organizations.js';
import { SecretHasher } from '../../src/shared/crypto/secret-hasher.js';
import { bearer } from '../support/builders.js';
import { startTestApp, type TestApp } from '../support/create-test-app.js';
import { createTestDatabase } from '../support/postgres.js';

/**
 * Accounts made before organizations existed: each gets its personal organization (its id the
 * account's, named Personal) with the account as its bound owner, and sees it through the API like
 * an account created since. Their devices now belong to those organizations, and every owner's and
 * sharee's access stays exactly what it was.
 */
describe('migration Organizations: every existing account gets its personal organization', () => {
  let database: { url: string; drop: () => Promise<void> };
  let t: TestApp;
  const password = 'existing-account-password-1';
  const owned = [`gw-mig-${randomUUID().slice(0, 8)}-a`, `gw-mig-${randomUUID().slice(0, 8)}-b`].sort();
  const accounts = [
    { id: randomUUID(), email: `before-1-${randomUUID().slice(0, 8)}@example.com`, role: 'customer', verified: true, createdAt: new Date('2026-01-02T03:04:05.678Z') },
    { id: randomUUID(), email: `before-2-${randomUUID().slice(0, 8)}@example.com`, role: 'customer', verified: false, createdAt: new Date('2026-02-03T04:05:06.789Z') },
    { id: randomUUID(), email: `before-3-${randomUUID().slice(0, 8)}@example.com`, role: 'admin', verified: true, createdAt: new Date('2026-03-04T05:06:07.890Z') },
  ];

  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
    const before = new DataSource({ ...dataSourceOptions({ url: database.url, poolSize: 1 }), migrations: MIGRATIONS.slice(0, MIGRATIONS.indexOf(Organizations1764002400000)) });
    await before.initialize();
    await before.runMigrations();
    for (const account of accounts) {
      await before.query('INSERT INTO users (id, email, password_hash, role, email_verified_at, token_version, created_at) VALUES ($1, $2, $3, $4, $5, 1, $6)', [
        account.id,
        account.email,
        'not-a-hash-yet',
        account.role,
        account.verified ? account.createdAt : null,
        account.createdAt,
      ]);
    }
    // The first account owns two devices and shares one with the second as viewer; the third (an administrator) owns none.
    for (const deviceId of owned) {
      await before.query(
        `INSERT INTO devices (device_id, hardware_id, firmware_version, secret_hash, registered_at, credentials_issued_at, owner_id, claimed_at)
         VALUES ($1, 'esp32s3-test', '0.1.4', 'not-a-hash', $2, $2, $3, $2)`,
        [deviceId, accounts[0].createdAt, accounts[0].id],
      );
    }
    await before.query(`INSERT INTO device_shares (share_id, device_id, granted_by, email, user_id, role, created_at) VALUES ($1, $2, $3, $4, $5, 'viewer', $6)`, [
      randomUUID(),
      owned[0],
      accounts[0].id,
      accounts[1].email,
      accounts[1].id,
      accounts[1].createdAt,
    ]);
    await before.destroy();
    t = await startTestApp(database.url);
    // The accounts' passwords, hashed as the service hashes them, so they can log in.
    const hash = await t.app.get(SecretHasher).hashLowEntropy(password);
    await t.db.query('UPDATE users SET password_hash = $1 WHERE id = ANY($2::uuid[])', [hash, accounts.map((account) => account.id)]);
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  it('stores one personal organization per account, with the account as its bound owner', async () => {
    const { rows: organizations } = await t.db.query('SELECT organization_id, name, personal_of AS personal, created_at, updated_at FROM organizations ORDER BY created_at');
    const { rows: members } = await t.db.query('SELECT organization_id, email, user_id, role, invited_at FROM organization_members ORDER BY invited_at');

    expect(organizations).toEqual(accounts.map((account) => ({ organization_id: account.id, name: 'Personal', personal: account.id, created_at: account.createdAt, updated_at: account.createdAt })));
    expect(members).toEqual(accounts.map((account) => ({ organization_id: account.id, email: account.email, user_id: account.id, role: 'owner', invited_at: account.createdAt })));
  });

  it('shows each account its personal organization, as owner, through the API', async () => {
    for (const account of accounts) {
      const login = await t.api.POST('/api/v1/auth/login', { body: { email: account.email, password } });
      expect(login.response.status).toBe(200);

      const { data, response } = await t.api.GET('/api/v1/organizations', { headers: bearer(login.data!.accessToken) });

      expect(response.status).toBe(200);
      expect(data!.items).toEqual([expect.objectContaining({ organizationId: account.id, name: 'Personal', personal: true, role: 'owner', createdAt: account.createdAt.toISOString() })]);
      expect(data!.nextCursor).toBeNull();
    }
  });

  it('keeps every owner and sharee seeing exactly the devices they saw, with the same access', async () => {
    const headersOf = async (account: (typeof accounts)[number]) => {
      const login = await t.api.POST('/api/v1/auth/login', { body: { email: account.email, password } });
      return bearer(login.data!.accessToken);
    };
    const seen = async (account: (typeof accounts)[number]) => {
      const { data } = await t.api.GET('/api/v1/dashboard/devices', { headers: await headersOf(account) });
      return data!.items.map((item) => [item.deviceId, item.access]);
    };

    expect(await seen(accounts[0])).toEqual(owned.map((deviceId) => [deviceId, 'owner']));
    expect(await seen(accounts[1])).toEqual([[owned[0], 'viewer']]);
    // The administrator sees every device, as before.
    expect(await seen(accounts[2])).toEqual(owned.map((deviceId) => [deviceId, 'admin']));
    const { rows } = await t.db.query('SELECT device_id, owner_id FROM devices ORDER BY device_id');
    expect(rows).toEqual(owned.map((deviceId) => ({ device_id: deviceId, owner_id: accounts[0].id })));
    const mine = await t.api.GET('/api/v1/user/devices', { headers: await headersOf(accounts[0]) });
    expect(mine.data!.items.map((item) => item.deviceId)).toEqual(owned);
  });
});
