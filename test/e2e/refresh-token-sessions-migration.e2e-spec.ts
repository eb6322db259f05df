import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { dataSourceOptions, MIGRATIONS } from '../../src/shared/database/data-source-options.js';
import { RefreshTokenSessions1763800300000 } from '../../src/shared/database/migrations/1763800300000-refresh-token-sessions.js';
import { bearer, getMe, refresh as deviceRefresh } from '../support/builders.js';
import { startTestApp, type TestApp } from '../support/create-test-app.js';
import { createTestDatabase } from '../support/postgres.js';

const PEPPER = 'migration-test-pepper-'.padEnd(40, 'p');
const hmac = (value: string) => createHmac('sha256', PEPPER).update(value, 'utf8').digest('hex');

/**
 * Refresh tokens stored before refresh-token families existed: each becomes a family (a session)
 * of its own, and keeps working across the upgrade, for devices and customers alike.
 */
describe('migration RefreshTokenSessions: refresh tokens issued before it keep working', () => {
  let database: { url: string; drop: () => Promise<void> };
  let t: TestApp;
  const userId = randomUUID();
  const deviceId = `gw-${randomBytes(4).toString('hex')}`;
  const userToken = `ucr_${randomBytes(32).toString('base64url')}`;
  const deviceToken = `dcr_${randomBytes(32).toString('base64url')}`;

  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
    const before = new DataSource({ ...dataSourceOptions({ url: database.url, poolSize: 1 }), migrations: MIGRATIONS.slice(0, MIGRATIONS.indexOf(RefreshTokenSessions1763800300000)) });
    await before.initialize();
    await before.runMigrations();
    await before.query(
      `INSERT INTO users (id, email, password_hash, role, email_verified_at, token_version, created_at) VALUES ($1, $2, 'not-a-hash', 'customer', now(), 1, now())`,
      [userId, `${userId}@example.com`],
    );
    await before.query(
      `INSERT INTO user_refresh_tokens (user_id, token_hash, token_version, issued_at, expires_at) VALUES ($1, $2, 1, now(), now() + interval '1 day')`,
      [userId, hmac(userToken)],
    );
    await before.query(
      `INSERT INTO devices (device_id, hardware_id, firmware_version, secret_hash, token_version, registered_at, credentials_issued_at) VALUES ($1, 'hw-1', '0.1.3', $2, 1, now(), now())`,
      [deviceId, hmac(randomBytes(32).toString('base64url'))],
    );
    await before.query(
      `INSERT INTO device_refresh_tokens (device_id, token_hash, token_version, issued_at, expires_at) VALUES ($1, $2, 1, now(), now() + interval '1 day')`,
      [deviceId, hmac(deviceToken)],
    );
    await before.destroy();
    t = await startTestApp(database.url, { SECRET_PEPPER: PEPPER });
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  it('gives every existing token a family of its own (its id)', async () => {
    for (const table of ['user_refresh_tokens', 'device_refresh_tokens']) {
      const { rows } = await t.db.query<{ same: boolean }>(`SELECT family_id = id AS same FROM ${table}`);
      expect(rows).toEqual([{ same: true }]);
    }
  });

  it('a customer refreshes with the old token: a working pair in that session, which logout ends', async () => {
    const refreshed = await t.api.POST('/api/v1/auth/refresh', { body: { refreshToken: userToken } });
    expect(refreshed.response.status).toBe(200);
    const me = () => t.api.GET('/api/v1/users/me', { headers: bearer(refreshed.data!.accessToken) });
    expect((await me()).response.status).toBe(200);

    expect((await t.api.POST('/api/v1/auth/logout', { body: { refreshToken: refreshed.data!.refreshToken } })).response.status).toBe(204);

    expect((await me()).response.status).toBe(401);
  });

  it('a device refreshes with the old token and gets a working pair', async () => {
    const refreshed = await deviceRefresh(t.api, deviceToken);

    expect(refreshed.response.status).toBe(200);
    expect((await getMe(t.api, refreshed.data!.accessToken)).response.status).toBe(200);
  });
});
