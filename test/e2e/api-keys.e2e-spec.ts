import { createHmac } from 'node:crypto';
import type { components } from '@device-cloud/client';
import { bearer } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, startTwoInstances, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';

type CreatedKey = components['schemas']['CreatedApiKeyResponse'];
type Scope = CreatedKey['scope'];
type Headers = { authorization: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface KeyRow {
  key_id: string;
  user_id: string;
  name: string;
  scope: string;
  key_hash: string;
  created_at: Date;
  last_used_at: Date | null;
}

function createKey(t: TestApp, who: Headers, body: { name: string; scope: Scope }) {
  return t.api.POST('/api/v1/user/api-keys', { body, headers: who });
}

/** A key of `who`, created through the API; fails the test unless that answers 201. */
async function aKey(t: TestApp, who: SignedIn, scope: Scope, name = `${scope} key`): Promise<CreatedKey & { headers: Headers }> {
  const { data, response } = await createKey(t, who.headers, { name, scope });
  if (response.status !== 201 || !data) throw new Error(`creating a ${scope} key answered ${response.status}`);
  return { ...data, headers: bearer(data.key) };
}

function listKeys(t: TestApp, who: Headers, query: { limit?: number; cursor?: string } = {}) {
  return t.api.GET('/api/v1/user/api-keys', { params: { query }, headers: who });
}

async function keyRow(t: TestApp, keyId: string): Promise<KeyRow | undefined> {
  const { rows } = await t.db.query<KeyRow>('SELECT * FROM api_keys WHERE key_id = $1', [keyId]);
  return rows[0];
}

async function configRevision(t: TestApp, deviceId: string): Promise<number> {
  const { rows } = await t.db.query<{ config_revision: number }>('SELECT config_revision FROM devices WHERE device_id = $1', [deviceId]);
  return rows[0].config_revision;
}

describe('API keys', () => {
  let t: TestApp;
  let owner: SignedIn;
  let other: SignedIn;
  let admin: SignedIn;
  let deviceId: string;

  beforeAll(async () => {
    t = await createTestApp(ADMIN_SETTINGS);
    [owner, other, admin] = [await aCustomer(t), await aCustomer(t), await anAdmin(t)];
    deviceId = (await aClaimedDevice(t, owner)).body.deviceId;
  });
  afterAll(async () => {
    await t.close();
  });

  describe('POST, GET and DELETE /api/v1/user/api-keys', () => {
    it('creates a key shown once (201, not cached), lists it without the key, and stores only its keyed hash', async () => {
      const created = await createKey(t, owner.headers, { name: '  Home Assistant  ', scope: 'read' });

      expect(created.response.status).toBe(201);
      expect({ cacheControl: created.response.headers.get('cache-control'), pragma: created.response.headers.get('pragma') }).toEqual({ cacheControl: 'no-store', pragma: 'no-cache' });
      const key = created.data!;
      expect(key).toEqual({ keyId: expect.stringMatching(UUID), name: 'Home Assistant', scope: 'read', key: expect.stringMatching(/^dck_[A-Za-z0-9_-]{43}$/), createdAt: expect.stringMatching(ISO_INSTANT) });

      const { data: list } = await listKeys(t, owner.headers);
      expect(list!.items).toContainEqual({ keyId: key.keyId, name: 'Home Assistant', scope: 'read', createdAt: key.createdAt, lastUsedAt: null });
      expect(JSON.stringify(list)).not.toContain(key.key.slice(4));

      const row = await keyRow(t, key.keyId);
      expect(row).toMatchObject({ user_id: owner.userId, name: 'Home Assistant', scope: 'read', last_used_at: null });
      expect(row!.key_hash).toBe(createHmac('sha256', t.secrets.pepper).update(key.key).digest('hex'));
      const { rows: everything } = await t.db.query('SELECT * FROM api_keys');
      expect(JSON.stringify(everything)).not.toContain(key.key.slice(4));
    });

    it('refuses bad input with 400 naming the field, and stores nothing', async () => {
      const before = (await t.db.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n as number;

      for (const [body, field] of [
        [{ name: 'x', scope: 'admin' }, 'scope'],
        [{ name: '   ', scope: 'read' }, 'name'],
        [{ name: 'x'.repeat(101), scope: 'write' }, 'name'],
        [{ name: 'tab\there', scope: 'read' }, 'name'],
        [{ scope: 'read' }, 'name'],
      ] as const) {
        const problem = expectProblem(await createKey(t, owner.headers, body as { name: string; scope: Scope }), 400, 'VALIDATION_FAILED');
        expect(problem.errors?.map((error) => error.field)).toContain(field);
      }
      expectProblem(await t.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: 'not-a-uuid' } }, headers: owner.headers }), 400, 'VALIDATION_FAILED');
      expectProblem(await listKeys(t, owner.headers, { cursor: 'bm90LWEtY3Vyc29y' }), 400, 'VALIDATION_FAILED');

      expect((await t.db.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n).toBe(before);
    });

    it('pages the list newest first with limit and cursor', async () => {
      const customer = await aCustomer(t);
      const keys = [];
      for (let i = 0; i < 5; i++) keys.push(await aKey(t, customer, 'read', `key ${i}`));

      const first = await listKeys(t, customer.headers, { limit: 2 });
      const second = await listKeys(t, customer.headers, { limit: 2, cursor: first.data!.nextCursor! });
      const third = await listKeys(t, customer.headers, { limit: 2, cursor: second.data!.nextCursor! });

      const pages = [first, second, third].map(({ data }) => data!.items.map((item) => item.name));
      expect(pages).toEqual([
        ['key 4', 'key 3'],
        ['key 2', 'key 1'],
        ['key 0'],
      ]);
      expect(third.data!.nextCursor).toBeNull();
    });

    it('allows at most 20 keys per account: the 21st is 409 TOO_MANY_API_KEYS and stores nothing; after a DELETE one more fits', async () => {
      const customer = await aCustomer(t);
      const keys = [];
      for (let i = 0; i < 20; i++) keys.push(await aKey(t, customer, 'read', `key ${i}`));

      expectProblem(await createKey(t, customer.headers, { name: 'one too many', scope: 'read' }), 409, 'TOO_MANY_API_KEYS');
      expect((await t.db.query('SELECT count(*)::int AS n FROM api_keys WHERE user_id = $1', [customer.userId])).rows[0].n).toBe(20);

      expect((await t.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: keys[0].keyId } }, headers: customer.headers })).response.status).toBe(204);
      expect((await createKey(t, customer.headers, { name: 'fits again', scope: 'read' })).response.status).toBe(201);
    });

    it("another account's key id is a 404, like an unknown one, and that key still works", async () => {
      const key = await aKey(t, owner, 'read');

      expectProblem(await t.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: key.keyId } }, headers: other.headers }), 404, 'NOT_FOUND');
      expectProblem(
        await t.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: '00000000-0000-4000-8000-000000000000' } }, headers: other.headers }),
        404,
        'NOT_FOUND',
      );
      expect((await listKeys(t, other.headers)).data!.items.map((item) => item.keyId)).not.toContain(key.keyId);

      expect(await keyRow(t, key.keyId)).toBeDefined();
      expect((await t.api.GET('/api/v1/dashboard/devices', { headers: key.headers })).response.status).toBe(200);
    });
  });

  describe('using a key', () => {
    it('a read key reads what its owner reads: dashboard devices, one device, history, CSV export, config, OTA history, alert rules, alerts, events, owned devices', async () => {
      const key = await aKey(t, owner, 'read');
      const path = { deviceId };

      const devices = await t.api.GET('/api/v1/dashboard/devices', { headers: key.headers });
      expect(devices.response.status).toBe(200);
      expect(devices.data!.items.map((item) => item.deviceId)).toEqual([deviceId]);
      const reads = [
        await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path }, headers: key.headers }),
        await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', { params: { path }, headers: key.headers }),
        await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', { params: { path, query: {} }, headers: key.headers, parseAs: 'text' }),
        await t.api.GET('/api/v1/dashboard/devices/{deviceId}/config', { params: { path }, headers: key.headers }),
        await t.api.GET('/api/v1/dashboard/devices/{deviceId}/ota/history', { params: { path }, headers: key.headers }),
        await t.api.GET('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path }, headers: key.headers }),
        await t.api.GET('/api/v1/dashboard/alerts', { headers: key.headers }),
        await t.api.GET('/api/v1/dashboard/events', { headers: key.headers }),
        await t.api.GET('/api/v1/user/devices', { headers: key.headers }),
      ];
      expect(reads.map(({ response }) => response.status)).toEqual(reads.map(() => 200));

      // Visibility is the owner's: another account's key does not see the device.
      const othersKey = await aKey(t, other, 'read');
      expect((await t.api.GET('/api/v1/dashboard/devices', { headers: othersKey.headers })).data!.items).toEqual([]);
      expectProblem(await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path }, headers: othersKey.headers }), 404, 'NOT_FOUND');
    });

    it('a read key on a write route is 403 API_KEY_SCOPE and changes nothing', async () => {
      const key = await aKey(t, owner, 'read');
      const revision = await configRevision(t, deviceId);
      const path = { deviceId };

      expectProblem(await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path }, body: { telemetryIntervalSec: 30 }, headers: key.headers }), 403, 'API_KEY_SCOPE');
      expectProblem(await t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path }, body: { rules: [] }, headers: key.headers }), 403, 'API_KEY_SCOPE');
      expectProblem(await t.api.DELETE('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path }, headers: key.headers }), 403, 'API_KEY_SCOPE');

      expect(await configRevision(t, deviceId)).toBe(revision);
      expect((await t.db.query('SELECT count(*)::int AS n FROM alert_rules WHERE device_id = $1', [deviceId])).rows[0].n).toBe(0);
    });

    it('a write key changes device config (PATCH 200) and alert rules (PUT 200)', async () => {
      const key = await aKey(t, owner, 'write');
      const revision = await configRevision(t, deviceId);
      const path = { deviceId };

      const patched = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path }, body: { telemetryIntervalSec: 45 }, headers: key.headers });
      expect(patched.response.status).toBe(200);
      expect(patched.data!.overrides).toMatchObject({ telemetryIntervalSec: 45 });
      expect(await configRevision(t, deviceId)).toBe(revision + 1);

      const rule = { ruleId: 'soc-key', metric: 'soc', op: 'below', threshold: 15, clearAt: 20, forSec: 0, enabled: true } as const;
      const put = await t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path }, body: { rules: [rule] }, headers: key.headers });
      expect({ status: put.response.status, body: put.data }).toEqual({ status: 200, body: { rules: [rule], inherited: false } });
      expect((await t.api.DELETE('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path }, headers: key.headers })).response.status).toBe(200);
    });

    it('neither key reaches account management, key management, webhooks, claims or the stream: 403 API_KEY_SCOPE, nothing changed', async () => {
      for (const scope of ['read', 'write'] as const) {
        const key = await aKey(t, owner, scope);
        const refused = [
          await t.api.GET('/api/v1/users/me', { headers: key.headers }),
          await t.api.PATCH('/api/v1/users/me', { body: { alertEmails: false }, headers: key.headers }),
          await t.api.POST('/api/v1/auth/resend-verification', { headers: key.headers }),
          await t.api.GET('/api/v1/user/api-keys', { headers: key.headers }),
          await createKey(t, key.headers, { name: 'minted by a key', scope: 'write' }),
          await t.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: key.keyId } }, headers: key.headers }),
          await t.api.GET('/api/v1/user/webhooks', { headers: key.headers }),
          await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId } }, headers: key.headers }),
          await t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', { params: { path: { deviceId } }, headers: key.headers }),
          await t.api.POST('/api/v1/dashboard/stream/tickets', { headers: key.headers }),
          await t.api.GET('/api/v1/dashboard/stream', { params: { query: {} }, headers: key.headers, parseAs: 'text' }),
          await t.api.GET('/api/v1/admin/config/defaults', { headers: key.headers }),
        ];
        for (const result of refused) expectProblem(result, 403, 'API_KEY_SCOPE');

        expect(await keyRow(t, key.keyId)).toBeDefined();
        expect((await ownedDeviceRow(t.db, deviceId))?.owner_id).toBe(owner.userId);
        expect((await t.db.query('SELECT count(*)::int AS n FROM api_keys WHERE name = $1', ['minted by a key'])).rows[0].n).toBe(0);
        expect((await t.db.query('SELECT alert_emails FROM users WHERE id = $1', [owner.userId])).rows[0].alert_emails).toBe(true);
      }
    });

    it("an administrator's key carries no admin rights: admin routes are 403 API_KEY_SCOPE, the dashboard shows only the administrator's own devices", async () => {
      const key = await aKey(t, admin, 'write');

      expectProblem(await t.api.GET('/api/v1/admin/config/defaults', { headers: key.headers }), 403, 'API_KEY_SCOPE');
      expectProblem(await t.api.PATCH('/api/v1/admin/config/defaults', { body: { telemetryIntervalSec: 30 }, headers: key.headers }), 403, 'API_KEY_SCOPE');
      expectProblem(await t.api.GET('/api/v1/admin/alert-rules/defaults', { headers: key.headers }), 403, 'API_KEY_SCOPE');

      // The administrator's token sees the customer's device; the administrator's key does not.
      expect((await t.api.GET('/api/v1/dashboard/devices', { headers: admin.headers })).data!.items.map((item) => item.deviceId)).toContain(deviceId);
      const viaKey = await t.api.GET('/api/v1/dashboard/devices', { headers: key.headers });
      expect(viaKey.response.status).toBe(200);
      expect(viaKey.data!.items.map((item) => item.deviceId)).not.toContain(deviceId);
      expectProblem(await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, body: { telemetryIntervalSec: 30 }, headers: key.headers }), 404, 'NOT_FOUND');
    });

    it('a revoked key is 401 invalid_token from the next request on; so are unknown and malformed keys', async () => {
      const key = await aKey(t, owner, 'read');
      expect((await t.api.GET('/api/v1/dashboard/devices', { headers: key.headers })).response.status).toBe(200);

      expect((await t.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: key.keyId } }, headers: owner.headers })).response.status).toBe(204);

      for (const headers of [key.headers, bearer(`dck_${'A'.repeat(43)}`), bearer('dck_short')]) {
        const refused = await t.api.GET('/api/v1/dashboard/devices', { headers });
        expectProblem(refused, 401, 'UNAUTHORIZED');
        expect(refused.response.headers.get('www-authenticate')).toContain('error="invalid_token"');
      }
      expect(await keyRow(t, key.keyId)).toBeUndefined();
    });

    it('records lastUsedAt on first use, at most once a minute after that', async () => {
      const key = await aKey(t, owner, 'read');
      const lastUsed = async () => (await listKeys(t, owner.headers)).data!.items.find((item) => item.keyId === key.keyId)!.lastUsedAt;
      expect(await lastUsed()).toBeNull();

      expect((await t.api.GET('/api/v1/dashboard/devices', { headers: key.headers })).response.status).toBe(200);
      const first = await lastUsed();
      expect(first).toEqual(expect.stringMatching(ISO_INSTANT));

      expect((await t.api.GET('/api/v1/dashboard/devices', { headers: key.headers })).response.status).toBe(200);
      expect(await lastUsed()).toBe(first);

      // A minute later (moved back in the database rather than waited for), the next use is recorded.
      await t.db.query("UPDATE api_keys SET last_used_at = last_used_at - interval '61 seconds' WHERE key_id = $1", [key.keyId]);
      const aged = await lastUsed();
      expect((await t.api.GET('/api/v1/dashboard/devices', { headers: key.headers })).response.status).toBe(200);
      const moved = await lastUsed();
      expect(Date.parse(moved!)).toBeGreaterThan(Date.parse(aged!));
      expect(Date.parse(moved!)).toBeGreaterThanOrEqual(Date.parse(first!));
    });
  });
});

describe('API keys: failed checks are limited per client address', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ LOGIN_MAX_FAILURES_PER_ADDRESS: '3' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('after 3 unknown keys the address gets 429 with Retry-After, even with a valid key; access tokens still work', async () => {
    const owner = await aCustomer(t);
    const key = await aKey(t, owner, 'read');
    for (let i = 0; i < 3; i++) expectProblem(await t.api.GET('/api/v1/dashboard/devices', { headers: bearer(`dck_${String(i).repeat(43)}`) }), 401, 'UNAUTHORIZED');

    const limited = await t.api.GET('/api/v1/dashboard/devices', { headers: bearer(`dck_${'9'.repeat(43)}`) });
    expectProblem(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.response.headers.get('retry-after'))).toBeGreaterThan(0);
    expectProblem(await t.api.GET('/api/v1/dashboard/devices', { headers: key.headers }), 429, 'RATE_LIMITED');

    expect((await t.api.GET('/api/v1/dashboard/devices', { headers: owner.headers })).response.status).toBe(200);
  });
});

describe('API keys on two instances', () => {
  it('a key revoked through one instance is refused by the other at once', async () => {
    const { a, b, close } = await startTwoInstances();
    try {
      const owner = await aCustomer(a);
      const key = await aKey(a, owner, 'read');
      expect((await b.api.GET('/api/v1/dashboard/devices', { headers: key.headers })).response.status).toBe(200);

      expect((await a.api.DELETE('/api/v1/user/api-keys/{keyId}', { params: { path: { keyId: key.keyId } }, headers: owner.headers })).response.status).toBe(204);

      expectProblem(await b.api.GET('/api/v1/dashboard/devices', { headers: key.headers }), 401, 'UNAUTHORIZED');
    } finally {
      await close();
    }
  });
});
