import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { components } from '@device-cloud/client';
import { aClaimCode, bearer, login, refresh, registerDevice, type RegisterBody, type Registered } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, aRegisteredDevice, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, startTestApp, type ApiClient, type TestApp } from '../support/create-test-app.js';
import { createTestDatabase } from '../support/postgres.js';
import { expectProblem, fieldsOf, type Problem } from '../support/problems.js';

type Headers = { authorization: string };
type OverridesPatch = components['schemas']['ConfigOverridesPatchRequest'];
type DefaultsPatch = components['schemas']['ConfigDefaultsPatchRequest'];
type DefaultsBody = components['schemas']['ConfigDefaultsResponse'];

/** What the migration seeds as fleet defaults (revision 1). */
const INITIAL_DEFAULTS = { telemetryIntervalSec: 60, uploadBatchSize: 50, otaCheckIntervalSec: 3600, otaChannel: 'stable', logLevel: 'warn', logUpload: 'errors', otaMinSoc: 40, otaTemperatureRange: { min: 0, max: 45 } } as const;
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** A gateway: its registration, and the claim code printed on its label. */
interface Gateway {
  deviceId: string;
  body: RegisterBody;
  registered: Registered;
  accessToken: string;
}

interface ConfigColumns {
  config_overrides: Record<string, unknown>;
  config_revision: number;
  config_updated_at: Date | null;
  applied_config_version: number | null;
  config_applied_at: Date | null;
}

interface DefaultsRow {
  settings: Record<string, unknown>;
  revision: number;
  updated_at: Date;
}

async function configColumns(db: pg.Pool, deviceId: string): Promise<ConfigColumns> {
  const { rows } = await db.query<ConfigColumns>(
    'SELECT config_overrides, config_revision, config_updated_at, applied_config_version, config_applied_at FROM devices WHERE device_id = $1',
    [deviceId],
  );
  if (!rows[0]) throw new Error(`no device ${deviceId}`);
  return rows[0];
}

async function defaultsRow(db: pg.Pool): Promise<DefaultsRow> {
  const { rows } = await db.query<DefaultsRow>('SELECT settings, revision, updated_at FROM config_defaults');
  expect(rows).toHaveLength(1);
  return rows[0];
}

/** The parts of a problem that must not tell one refusal from another (requestId and instance differ per call). */
function comparable(problem: Problem): Omit<Problem, 'requestId' | 'instance'> {
  const { requestId: _requestId, instance: _instance, ...rest } = problem;
  return rest;
}

/**
 * Reads until `done` holds or `timeoutMs` passed, and returns the last answer for the caller to
 * assert on: change notifications from PostgreSQL arrive asynchronously.
 */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 2000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function gatewayConfig(api: ApiClient, accessToken: string | undefined, ifNoneMatch?: string) {
  return api.GET('/api/v1/device/config', {
    headers: { ...(accessToken === undefined ? {} : bearer(accessToken)), ...(ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch }) },
  });
}

function confirmApplied(api: ApiClient, accessToken: string | undefined, version: unknown) {
  return api.POST('/api/v1/device/config/applied', {
    body: (version === undefined ? {} : { version }) as { version: number },
    headers: accessToken === undefined ? {} : bearer(accessToken),
  });
}

function dashboardConfig(api: ApiClient, headers: Headers | undefined, deviceId: string) {
  return api.GET('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, headers });
}

function patchOverrides(api: ApiClient, headers: Headers | undefined, deviceId: string, body: OverridesPatch | unknown, ifMatch?: string) {
  return api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', {
    params: { path: { deviceId } },
    body: body as OverridesPatch,
    headers: { ...headers, ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }) },
  });
}

function dashboardDevice(api: ApiClient, headers: Headers, deviceId: string) {
  return api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers });
}

/** The device as the dashboard list shows it (the list is paged by deviceId; 100 is enough for one customer here). */
async function listedDevice(api: ApiClient, headers: Headers, deviceId: string) {
  const { data, response } = await api.GET('/api/v1/dashboard/devices', { params: { query: { limit: 100 } }, headers });
  expect(response.status).toBe(200);
  return data!.items.find((item) => item.deviceId === deviceId);
}

function getDefaults(api: ApiClient, headers: Headers | undefined) {
  return api.GET('/api/v1/admin/config/defaults', { headers });
}

function patchDefaults(api: ApiClient, headers: Headers | undefined, body: DefaultsPatch | unknown, ifMatch?: string) {
  return api.PATCH('/api/v1/admin/config/defaults', {
    body: body as DefaultsPatch,
    headers: { ...headers, ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }) },
  });
}

async function aGateway(t: TestApp, owner?: SignedIn): Promise<Gateway> {
  const { body, registered } = owner ? await aClaimedDevice(t, owner) : await aRegisteredDevice(t);
  return { deviceId: body.deviceId, body, registered, accessToken: registered.accessToken };
}

/** The gateway's configuration and its ETag; fails the test unless the answer is 200. */
async function currentConfig(api: ApiClient, gateway: Gateway) {
  const { data, response } = await gatewayConfig(api, gateway.accessToken);
  expect(response.status).toBe(200);
  return { config: data!, etag: response.headers.get('etag')! };
}

/** Sets overrides as the given customer or administrator; fails the test unless the answer is 200. */
async function override(api: ApiClient, headers: Headers, deviceId: string, body: OverridesPatch) {
  const result = await patchOverrides(api, headers, deviceId, body);
  expect(result.response.status).toBe(200);
  return result.data!;
}

/** Everything a refused change could have touched: the device's columns and what the dashboard and the gateway are told. */
async function configState(t: TestApp, headers: Headers, gateway: Gateway) {
  const dashboard = await dashboardConfig(t.api, headers, gateway.deviceId);
  const polled = await gatewayConfig(t.api, gateway.accessToken);
  return {
    columns: await configColumns(t.db, gateway.deviceId),
    dashboard: { status: dashboard.response.status, etag: dashboard.response.headers.get('etag'), body: dashboard.data },
    gateway: { status: polled.response.status, etag: polled.response.headers.get('etag'), body: polled.data },
  };
}

/** JWT and hashing keys shared by instances that serve the same database. */
function sharedSecrets(): Record<string, string> {
  const key = () => randomBytes(32).toString('base64url');
  return { DEVICE_JWT_SECRET: key(), CUSTOMER_JWT_SECRET: key(), SECRET_PEPPER: key() };
}

describe('device configuration', () => {
  describe('one instance, fleet defaults left as seeded', () => {
    let t: TestApp;
    let admin: SignedIn;
    let owner: SignedIn;
    let other: SignedIn;

    beforeAll(async () => {
      t = await createTestApp({ ...ADMIN_SETTINGS });
      admin = await anAdmin(t);
      [owner, other] = [await aCustomer(t), await aCustomer(t)];
    });
    afterAll(async () => {
      await t.close();
    });

    it('the fleet defaults are the seeded ones, revision 1 (what the versions below count from)', async () => {
      const { data } = await getDefaults(t.api, admin.headers);

      expect(data).toEqual({ revision: 1, ...INITIAL_DEFAULTS, updatedAt: expect.stringMatching(ISO_INSTANT) });
    });

    describe('GET /api/v1/device/config', () => {
      it('right after registering: the register response\'s config, version 1 with the fleet defaults, ETag "config-1"', async () => {
        const before = Date.now();
        const gateway = await aGateway(t);

        const { data, response } = await gatewayConfig(t.api, gateway.accessToken);

        expect(response.status).toBe(200);
        expect(response.headers.get('etag')).toBe('"config-1"');
        expect(data).toEqual({ version: 1, ...INITIAL_DEFAULTS, updatedAt: expect.stringMatching(ISO_INSTANT) });
        expect(data).toEqual(gateway.registered.config);
        expect(Date.parse(data!.updatedAt)).toBeGreaterThanOrEqual(before - 1000);
        expect(Date.parse(data!.updatedAt)).toBeLessThanOrEqual(Date.now());
      });

      it('If-None-Match with the current ETag: 304 with an empty body; another ETag: 200 with the document', async () => {
        const gateway = await aGateway(t);
        const { config, etag } = await currentConfig(t.api, gateway);

        const same = await gatewayConfig(t.api, gateway.accessToken, etag);
        expect(same.response.status).toBe(304);
        expect(await same.response.text()).toBe('');
        expect(same.response.headers.get('etag')).toBe(etag);
        expect((await gatewayConfig(t.api, gateway.accessToken, `W/${etag}`)).response.status).toBe(304);
        expect((await gatewayConfig(t.api, gateway.accessToken, `"config-0", ${etag}`)).response.status).toBe(304);

        for (const other of ['"config-0"', '"config-2"', '"defaults-1"', 'garbage']) {
          const { data, response } = await gatewayConfig(t.api, gateway.accessToken, other);
          expect({ other, status: response.status }).toEqual({ other, status: 200 });
          expect(data).toEqual(config);
          expect(response.headers.get('etag')).toBe(etag);
        }
      });

      it('anonymous: 401; a customer token: 401', async () => {
        expectProblem(await gatewayConfig(t.api, undefined), 401, 'UNAUTHORIZED');
        expectProblem(await gatewayConfig(t.api, owner.accessToken), 401, 'UNAUTHORIZED');
      });

      it('the version grows with every change of the device\'s overrides, and only then', async () => {
        const gateway = await aGateway(t, owner);
        const first = await currentConfig(t.api, gateway);
        expect(first.config.version).toBe(1);

        await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: 30 });
        const second = await currentConfig(t.api, gateway);
        expect(second.config).toEqual({ ...first.config, version: 2, telemetryIntervalSec: 30, updatedAt: expect.stringMatching(ISO_INSTANT) });
        expect(second.etag).toBe('"config-2"');
        expect(Date.parse(second.config.updatedAt)).toBeGreaterThanOrEqual(Date.parse(first.config.updatedAt));
        expect((await gatewayConfig(t.api, gateway.accessToken, first.etag)).response.status).toBe(200);
        const afterChange = await configColumns(t.db, gateway.deviceId);

        // Restating an override, clearing one that is not set: nothing changes.
        await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: 30 });
        await override(t.api, owner.headers, gateway.deviceId, { logLevel: null, uploadBatchSize: null });
        expect(await currentConfig(t.api, gateway)).toEqual(second);
        expect((await gatewayConfig(t.api, gateway.accessToken, second.etag)).response.status).toBe(304);
        expect(await configColumns(t.db, gateway.deviceId)).toEqual(afterChange);

        await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: null });
        const third = await currentConfig(t.api, gateway);
        expect(third.config).toEqual({ ...first.config, version: 3, updatedAt: expect.stringMatching(ISO_INSTANT) });
        expect(third.etag).toBe('"config-3"');
        expect((await gatewayConfig(t.api, gateway.accessToken, second.etag)).response.status).toBe(200);
        expect(await configColumns(t.db, gateway.deviceId)).toEqual(expect.objectContaining({ config_overrides: {}, config_revision: 2 }));
      });
    });

    describe('POST /api/v1/device/config/applied', () => {
      it('204; stores the version and when; repeating it is a 204 that changes nothing', async () => {
        const gateway = await aGateway(t);
        const before = Date.now();

        const { response } = await confirmApplied(t.api, gateway.accessToken, 1);

        expect(response.status).toBe(204);
        expect(await response.text()).toBe('');
        const stored = await configColumns(t.db, gateway.deviceId);
        expect(stored.applied_config_version).toBe(1);
        expect(stored.config_applied_at!.getTime()).toBeGreaterThanOrEqual(before);
        expect(stored.config_applied_at!.getTime()).toBeLessThanOrEqual(Date.now());

        t.clock.advanceMs(20);
        expect((await confirmApplied(t.api, gateway.accessToken, 1)).response.status).toBe(204);
        expect(await configColumns(t.db, gateway.deviceId)).toEqual(stored);
      });

      it('keeps the highest version confirmed and when it was first confirmed: an older one later changes nothing', async () => {
        const gateway = await aGateway(t, owner);
        expect((await confirmApplied(t.api, gateway.accessToken, 1)).response.status).toBe(204);
        const firstAt = (await configColumns(t.db, gateway.deviceId)).config_applied_at!;
        await override(t.api, owner.headers, gateway.deviceId, { uploadBatchSize: 100 });
        t.clock.advanceMs(20);

        expect((await confirmApplied(t.api, gateway.accessToken, 2)).response.status).toBe(204);
        const second = await configColumns(t.db, gateway.deviceId);
        expect(second.applied_config_version).toBe(2);
        expect(second.config_applied_at!.getTime()).toBeGreaterThan(firstAt.getTime());

        t.clock.advanceMs(20);
        expect((await confirmApplied(t.api, gateway.accessToken, 1)).response.status).toBe(204);
        expect((await confirmApplied(t.api, gateway.accessToken, 2)).response.status).toBe(204);
        expect(await configColumns(t.db, gateway.deviceId)).toEqual(second);
      });

      it('a version above the device\'s current one: 400 CONFIG_VERSION_UNKNOWN naming version, nothing stored', async () => {
        const gateway = await aGateway(t, owner);
        await override(t.api, owner.headers, gateway.deviceId, { logLevel: 'debug' });
        const before = await configColumns(t.db, gateway.deviceId);

        const problem = expectProblem(await confirmApplied(t.api, gateway.accessToken, 3), 400, 'CONFIG_VERSION_UNKNOWN');

        expect(fieldsOf(problem)).toEqual(['version']);
        expect(await configColumns(t.db, gateway.deviceId)).toEqual(before);
        expect((await confirmApplied(t.api, gateway.accessToken, 2)).response.status).toBe(204);
      });

      it.each([
        ['0', 0],
        ['-1', -1],
        ['1.5', 1.5],
        ['the string "1"', '1'],
        ['null', null],
        ['no version at all', undefined],
        ['2^31', 2 ** 31],
      ])('version %s: 400 VALIDATION_FAILED naming version, nothing stored', async (_name, version) => {
        const gateway = await aGateway(t);
        const before = await configColumns(t.db, gateway.deviceId);

        const problem = expectProblem(await confirmApplied(t.api, gateway.accessToken, version), 400, 'VALIDATION_FAILED');

        expect(fieldsOf(problem)).toContain('version');
        expect(await configColumns(t.db, gateway.deviceId)).toEqual(before);
      });

      it('anonymous: 401; a customer token: 401; nothing stored', async () => {
        const gateway = await aGateway(t, owner);

        expectProblem(await confirmApplied(t.api, undefined, 1), 401, 'UNAUTHORIZED');
        expectProblem(await confirmApplied(t.api, owner.accessToken, 1), 401, 'UNAUTHORIZED');
        expect((await configColumns(t.db, gateway.deviceId)).applied_config_version).toBeNull();
      });
    });

    describe('GET /api/v1/dashboard/devices/:deviceId/config', () => {
      let gateway: Gateway;
      let unclaimed: Gateway;

      beforeAll(async () => {
        gateway = await aGateway(t, owner);
        unclaimed = await aGateway(t);
      });

      it('the owner: 200 with the configuration the gateway gets, no overrides, nothing applied yet, and the same ETag', async () => {
        const polled = await currentConfig(t.api, gateway);

        const { data, response } = await dashboardConfig(t.api, owner.headers, gateway.deviceId);

        expect(response.status).toBe(200);
        expect(response.headers.get('etag')).toBe(polled.etag);
        expect(data).toEqual({ deviceId: gateway.deviceId, config: polled.config, overrides: {}, appliedVersion: null, appliedAt: null, status: 'pending' });
      });

      it('an administrator: 200 for a customer\'s device and for an unclaimed one', async () => {
        for (const device of [gateway, unclaimed]) {
          const { data, response } = await dashboardConfig(t.api, admin.headers, device.deviceId);
          expect(response.status).toBe(200);
          expect(data!.deviceId).toBe(device.deviceId);
          expect(data!.config).toEqual((await currentConfig(t.api, device)).config);
        }
      });

      it('another customer: 404 NOT_FOUND, the same answer as for a device that does not exist (an unclaimed one too)', async () => {
        const hidden = expectProblem(await dashboardConfig(t.api, other.headers, gateway.deviceId), 404, 'NOT_FOUND');
        const unowned = expectProblem(await dashboardConfig(t.api, other.headers, unclaimed.deviceId), 404, 'NOT_FOUND');
        const unknown = expectProblem(await dashboardConfig(t.api, other.headers, 'gw-does-not-exist'), 404, 'NOT_FOUND');

        expect(comparable(hidden)).toEqual(comparable(unknown));
        expect(comparable(unowned)).toEqual(comparable(unknown));
      });

      it('anonymous: 401; the device\'s own token: 401; an id of the wrong shape: 400 naming deviceId', async () => {
        expectProblem(await dashboardConfig(t.api, undefined, gateway.deviceId), 401, 'UNAUTHORIZED');
        expectProblem(await dashboardConfig(t.api, bearer(gateway.accessToken), gateway.deviceId), 401, 'UNAUTHORIZED');
        expect(fieldsOf(expectProblem(await dashboardConfig(t.api, owner.headers, 'gw 1'), 400, 'VALIDATION_FAILED'))).toContain('deviceId');
      });
    });

    describe('PATCH /api/v1/dashboard/devices/:deviceId/config', () => {
      it('a value overrides the fleet default, null goes back to it; the gateway gets the same document', async () => {
        const gateway = await aGateway(t, owner);

        const set = await patchOverrides(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: 30, otaChannel: 'beta' });

        expect(set.response.status).toBe(200);
        expect(set.response.headers.get('etag')).toBe('"config-2"');
        expect(set.data).toEqual({
          deviceId: gateway.deviceId,
          config: { version: 2, ...INITIAL_DEFAULTS, telemetryIntervalSec: 30, otaChannel: 'beta', updatedAt: expect.stringMatching(ISO_INSTANT) },
          overrides: { telemetryIntervalSec: 30, otaChannel: 'beta' },
          appliedVersion: null,
          appliedAt: null,
          status: 'pending',
        });
        expect((await currentConfig(t.api, gateway)).config).toEqual(set.data!.config);
        expect((await dashboardConfig(t.api, owner.headers, gateway.deviceId)).data).toEqual(set.data);
        const columns = await configColumns(t.db, gateway.deviceId);
        expect(columns).toEqual(expect.objectContaining({ config_overrides: { telemetryIntervalSec: 30, otaChannel: 'beta' }, config_revision: 1 }));
        expect(set.data!.config.updatedAt).toBe(columns.config_updated_at!.toISOString());

        const cleared = await patchOverrides(t.api, owner.headers, gateway.deviceId, { otaChannel: null, logLevel: 'debug' });

        expect(cleared.response.status).toBe(200);
        expect(cleared.data!.overrides).toEqual({ telemetryIntervalSec: 30, logLevel: 'debug' });
        expect(cleared.data!.config).toEqual({ version: 3, ...INITIAL_DEFAULTS, telemetryIntervalSec: 30, logLevel: 'debug', updatedAt: expect.stringMatching(ISO_INSTANT) });
        expect((await currentConfig(t.api, gateway)).config).toEqual(cleared.data!.config);

        const all = await patchOverrides(t.api, owner.headers, gateway.deviceId, {
          telemetryIntervalSec: null,
          uploadBatchSize: null,
          otaCheckIntervalSec: null,
          otaChannel: null,
          logLevel: null,
        });

        expect(all.data!.overrides).toEqual({});
        expect(all.data!.config).toEqual({ version: 4, ...INITIAL_DEFAULTS, updatedAt: expect.stringMatching(ISO_INSTANT) });
        expect((await currentConfig(t.api, gateway)).config).toEqual(all.data!.config);
        expect((await configColumns(t.db, gateway.deviceId)).config_overrides).toEqual({});
      });

      it('accepts every bound and every listed value', async () => {
        const gateway = await aGateway(t, owner);
        const settings: OverridesPatch[] = [
          { telemetryIntervalSec: 5, uploadBatchSize: 1, otaCheckIntervalSec: 60, otaChannel: 'beta', logLevel: 'error' },
          { telemetryIntervalSec: 86_400, uploadBatchSize: 500, otaCheckIntervalSec: 604_800, otaChannel: 'stable', logLevel: 'warn' },
          { logLevel: 'info' },
          { logLevel: 'debug' },
        ];
        let expected = {};

        for (const body of settings) {
          const { data, response } = await patchOverrides(t.api, owner.headers, gateway.deviceId, body);
          expected = { ...expected, ...body };
          expect({ body, status: response.status }).toEqual({ body, status: 200 });
          expect(data!.overrides).toEqual(expected);
          expect((await currentConfig(t.api, gateway)).config).toEqual(expect.objectContaining(expected));
        }
      });

      describe('a refused change changes nothing', () => {
        let gateway: Gateway;

        beforeAll(async () => {
          gateway = await aGateway(t, owner);
          await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: 30, logLevel: 'info' });
        });

        it.each([
          ['an unknown key', 'colour', { colour: 'red' }],
          ['an unknown key next to a valid one', 'colour', { uploadBatchSize: 100, colour: 'red' }],
          ['telemetryIntervalSec 4', 'telemetryIntervalSec', { telemetryIntervalSec: 4 }],
          ['telemetryIntervalSec 86401', 'telemetryIntervalSec', { telemetryIntervalSec: 86_401 }],
          ['telemetryIntervalSec 30.5', 'telemetryIntervalSec', { telemetryIntervalSec: 30.5 }],
          ['telemetryIntervalSec "45"', 'telemetryIntervalSec', { telemetryIntervalSec: '45' }],
          ['telemetryIntervalSec true', 'telemetryIntervalSec', { telemetryIntervalSec: true }],
          ['telemetryIntervalSec {}', 'telemetryIntervalSec', { telemetryIntervalSec: {} }],
          ['uploadBatchSize 0', 'uploadBatchSize', { uploadBatchSize: 0 }],
          ['uploadBatchSize 501', 'uploadBatchSize', { uploadBatchSize: 501 }],
          ['otaCheckIntervalSec 59', 'otaCheckIntervalSec', { otaCheckIntervalSec: 59 }],
          ['otaCheckIntervalSec 604801', 'otaCheckIntervalSec', { otaCheckIntervalSec: 604_801 }],
          ['otaChannel "alpha"', 'otaChannel', { otaChannel: 'alpha' }],
          ['otaChannel "Beta"', 'otaChannel', { otaChannel: 'Beta' }],
          ['otaChannel 1', 'otaChannel', { otaChannel: 1 }],
          ['logLevel "trace"', 'logLevel', { logLevel: 'trace' }],
          ['logLevel ["debug"]', 'logLevel', { logLevel: ['debug'] }],
          ['a valid value next to an out-of-range one', 'telemetryIntervalSec', { uploadBatchSize: 100, telemetryIntervalSec: 0 }],
          ['a cleared key next to an invalid one', 'logLevel', { telemetryIntervalSec: null, logLevel: 'verbose' }],
          ['an empty object', '(root)', {}],
          ['an array', '(root)', []],
          ['no body at all', '(root)', undefined],
        ])('%s: 400 VALIDATION_FAILED naming %s', async (_name, field, body) => {
          const before = await configState(t, owner.headers, gateway);

          const problem = expectProblem(await patchOverrides(t.api, owner.headers, gateway.deviceId, body), 400, 'VALIDATION_FAILED');

          expect(fieldsOf(problem)).toContain(field);
          expect(await configState(t, owner.headers, gateway)).toEqual(before);
        });

        it('a stale If-Match: 412 PRECONDITION_FAILED; a weak one: 412; the current one: 200', async () => {
          const { etag: stale } = await currentConfig(t.api, gateway);
          await override(t.api, owner.headers, gateway.deviceId, { otaCheckIntervalSec: 7200 });
          const before = await configState(t, owner.headers, gateway);
          const current = before.dashboard.etag!;
          expect(current).not.toBe(stale);

          expectProblem(await patchOverrides(t.api, owner.headers, gateway.deviceId, { otaCheckIntervalSec: 600 }, stale), 412, 'PRECONDITION_FAILED');
          expectProblem(await patchOverrides(t.api, owner.headers, gateway.deviceId, { otaCheckIntervalSec: 600 }, `W/${current}`), 412, 'PRECONDITION_FAILED');
          expect(await configState(t, owner.headers, gateway)).toEqual(before);

          const { data, response } = await patchOverrides(t.api, owner.headers, gateway.deviceId, { otaCheckIntervalSec: 600 }, current);
          expect(response.status).toBe(200);
          expect(data!.overrides.otaCheckIntervalSec).toBe(600);
          expect(data!.config.version).toBe(before.dashboard.body!.config.version + 1);
          expect(response.headers.get('etag')).toBe(`"config-${data!.config.version}"`);
          expectProblem(await patchOverrides(t.api, owner.headers, gateway.deviceId, { otaCheckIntervalSec: 900 }, current), 412, 'PRECONDITION_FAILED');
        });

        it('another customer: 404 NOT_FOUND, the same as for a device that does not exist', async () => {
          const before = await configState(t, owner.headers, gateway);

          const hidden = expectProblem(await patchOverrides(t.api, other.headers, gateway.deviceId, { telemetryIntervalSec: 10 }), 404, 'NOT_FOUND');
          const unknown = expectProblem(await patchOverrides(t.api, other.headers, 'gw-does-not-exist', { telemetryIntervalSec: 10 }), 404, 'NOT_FOUND');

          expect(comparable(hidden)).toEqual(comparable(unknown));
          expect(await configState(t, owner.headers, gateway)).toEqual(before);
        });

        it('anonymous: 401; the device\'s own token: 401; an id of the wrong shape: 400', async () => {
          const before = await configState(t, owner.headers, gateway);

          expectProblem(await patchOverrides(t.api, undefined, gateway.deviceId, { telemetryIntervalSec: 10 }), 401, 'UNAUTHORIZED');
          expectProblem(await patchOverrides(t.api, bearer(gateway.accessToken), gateway.deviceId, { telemetryIntervalSec: 10 }), 401, 'UNAUTHORIZED');
          expect(fieldsOf(expectProblem(await patchOverrides(t.api, owner.headers, 'gw 1', { telemetryIntervalSec: 10 }), 400, 'VALIDATION_FAILED'))).toContain('deviceId');
          expect(await configState(t, owner.headers, gateway)).toEqual(before);
        });
      });

      it('an administrator edits any device: a customer\'s and an unclaimed one; the owner sees the change', async () => {
        const owned = await aGateway(t, owner);
        const unclaimed = await aGateway(t);

        const onOwned = await patchOverrides(t.api, admin.headers, owned.deviceId, { uploadBatchSize: 200 });
        const onUnclaimed = await patchOverrides(t.api, admin.headers, unclaimed.deviceId, { logLevel: 'error' });

        expect(onOwned.response.status).toBe(200);
        expect(onUnclaimed.response.status).toBe(200);
        expect((await dashboardConfig(t.api, owner.headers, owned.deviceId)).data!.overrides).toEqual({ uploadBatchSize: 200 });
        expect((await currentConfig(t.api, owned)).config.uploadBatchSize).toBe(200);
        expect((await currentConfig(t.api, unclaimed)).config.logLevel).toBe('error');
        expect(await configColumns(t.db, unclaimed.deviceId)).toEqual(expect.objectContaining({ config_overrides: { logLevel: 'error' }, config_revision: 1 }));
      });
    });

    describe('configuration sync in the dashboard', () => {
      it('pending until the gateway confirms the version it should run, in_sync then, pending again after a change', async () => {
        const gateway = await aGateway(t, owner);
        const sync = async () => {
          const detail = (await dashboardDevice(t.api, owner.headers, gateway.deviceId)).data!.config;
          const listed = (await listedDevice(t.api, owner.headers, gateway.deviceId))!.config;
          const view = (await dashboardConfig(t.api, owner.headers, gateway.deviceId)).data!;
          expect(listed).toEqual(detail);
          expect({ appliedVersion: view.appliedVersion, appliedAt: view.appliedAt, status: view.status }).toEqual({
            appliedVersion: detail.appliedVersion,
            appliedAt: detail.appliedAt,
            status: detail.status,
          });
          expect(view.config.version).toBe(detail.desiredVersion);
          return detail;
        };

        expect(await sync()).toEqual({ desiredVersion: 1, appliedVersion: null, appliedAt: null, status: 'pending' });

        const { config } = await currentConfig(t.api, gateway);
        expect((await confirmApplied(t.api, gateway.accessToken, config.version)).response.status).toBe(204);
        const appliedAt = (await configColumns(t.db, gateway.deviceId)).config_applied_at!.toISOString();
        expect(await sync()).toEqual({ desiredVersion: 1, appliedVersion: 1, appliedAt, status: 'in_sync' });

        await override(t.api, owner.headers, gateway.deviceId, { otaChannel: 'beta' });
        expect(await sync()).toEqual({ desiredVersion: 2, appliedVersion: 1, appliedAt, status: 'pending' });

        expect((await confirmApplied(t.api, gateway.accessToken, 2)).response.status).toBe(204);
        const appliedAgainAt = (await configColumns(t.db, gateway.deviceId)).config_applied_at!.toISOString();
        expect(await sync()).toEqual({ desiredVersion: 2, appliedVersion: 2, appliedAt: appliedAgainAt, status: 'in_sync' });
      });

      it('online means telemetry within three of the device\'s own telemetry intervals', async () => {
        const gateway = await aGateway(t, owner);
        const telemetryAgo = (seconds: number) => t.db.query(`UPDATE devices SET last_telemetry_at = now() - make_interval(secs => $2) WHERE device_id = $1`, [gateway.deviceId, seconds]);
        const online = async () => {
          const detail = (await dashboardDevice(t.api, owner.headers, gateway.deviceId)).data!.online;
          const listed = (await listedDevice(t.api, owner.headers, gateway.deviceId))!.online;
          expect(listed).toBe(detail);
          return detail;
        };

        await telemetryAgo(20);
        expect(await online()).toBe(true);
        await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: 5 });
        expect(await online()).toBe(false);
        await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: null });
        expect(await online()).toBe(true);

        await telemetryAgo(2 * 3600);
        expect(await online()).toBe(false);
        await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: 3600 });
        expect(await online()).toBe(true);
        await telemetryAgo(3 * 3600 + 60);
        expect(await online()).toBe(false);
      });
    });

    describe('caches follow changes made elsewhere', () => {
      it('overrides changed directly in the database reach the gateway\'s next poll and the dashboard', async () => {
        const gateway = await aGateway(t, owner);
        const before = await currentConfig(t.api, gateway);
        expect((await gatewayConfig(t.api, gateway.accessToken, before.etag)).response.status).toBe(304);
        expect((await dashboardConfig(t.api, owner.headers, gateway.deviceId)).data!.overrides).toEqual({});

        await t.db.query(`UPDATE devices SET config_overrides = '{"telemetryIntervalSec": 30}', config_revision = config_revision + 1 WHERE device_id = $1`, [gateway.deviceId]);

        const polled = await eventually(
          () => gatewayConfig(t.api, gateway.accessToken, before.etag),
          (result) => result.response.status !== 304,
        );
        expect(polled.response.status).toBe(200);
        expect(polled.response.headers.get('etag')).toBe(`"config-${before.config.version + 1}"`);
        expect(polled.data).toEqual({ ...before.config, version: before.config.version + 1, telemetryIntervalSec: 30 });
        const view = (await dashboardConfig(t.api, owner.headers, gateway.deviceId)).data!;
        expect(view.overrides).toEqual({ telemetryIntervalSec: 30 });
        expect(view.config).toEqual(polled.data);
      });

      it('a confirmation recorded by the gateway is what the dashboard shows next, even after the dashboard read the device', async () => {
        const gateway = await aGateway(t, owner);
        const { config } = await currentConfig(t.api, gateway);
        expect((await dashboardConfig(t.api, owner.headers, gateway.deviceId)).data!.status).toBe('pending');

        expect((await confirmApplied(t.api, gateway.accessToken, config.version)).response.status).toBe(204);

        const view = (await dashboardConfig(t.api, owner.headers, gateway.deviceId)).data!;
        expect(view).toEqual(expect.objectContaining({ appliedVersion: config.version, appliedAt: expect.stringMatching(ISO_INSTANT), status: 'in_sync' }));
      });

      it('a token version bumped in the database: the access token issued before is refused', async () => {
        const gateway = await aGateway(t);
        await currentConfig(t.api, gateway);
        await currentConfig(t.api, gateway);

        await t.db.query('UPDATE devices SET token_version = token_version + 1 WHERE device_id = $1', [gateway.deviceId]);

        const refused = await eventually(
          () => gatewayConfig(t.api, gateway.accessToken),
          (result) => result.response.status === 401,
        );
        expectProblem(refused, 401, 'UNAUTHORIZED');
        expectProblem(await confirmApplied(t.api, gateway.accessToken, 1), 401, 'UNAUTHORIZED');
      });

      it('refresh token reuse: every access token issued before is refused at once; a new login works', async () => {
        const gateway = await aGateway(t);
        await currentConfig(t.api, gateway);
        const rotated = (await refresh(t.api, gateway.registered.refreshToken)).data!;
        expect((await gatewayConfig(t.api, rotated.accessToken)).response.status).toBe(200);
        expect((await gatewayConfig(t.api, gateway.accessToken)).response.status).toBe(200);
        const latest = (await refresh(t.api, rotated.refreshToken)).data!;

        // Two generations old: reuse (a repeat of the immediately previous token within the grace is not).
        expectProblem(await refresh(t.api, gateway.registered.refreshToken), 401, 'INVALID_TOKEN');

        expectProblem(await gatewayConfig(t.api, gateway.accessToken), 401, 'UNAUTHORIZED');
        expectProblem(await gatewayConfig(t.api, rotated.accessToken), 401, 'UNAUTHORIZED');
        expectProblem(await gatewayConfig(t.api, latest.accessToken), 401, 'UNAUTHORIZED');
        const again = (await login(t.api, gateway.deviceId, gateway.registered.deviceSecret)).data!;
        expect((await gatewayConfig(t.api, again.accessToken)).data).toEqual(gateway.registered.config);
      });

      it('a re-registration voids the old tokens at once; its response carries the configuration the gateway then polls', async () => {
        const gateway = await aGateway(t, owner);
        expect((await login(t.api, gateway.deviceId, gateway.registered.deviceSecret)).response.status).toBe(200);
        await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: 15, otaChannel: 'beta' });
        const before = await currentConfig(t.api, gateway);
        const opened = await t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', { params: { path: { deviceId: gateway.deviceId } }, headers: owner.headers });
        expect(opened.response.status).toBe(200);
        expect((await gatewayConfig(t.api, gateway.accessToken)).response.status).toBe(200);

        const again = await registerDevice(t.api, { ...gateway.body, claimCode: aClaimCode() });

        expectProblem(await gatewayConfig(t.api, gateway.accessToken), 401, 'UNAUTHORIZED');
        const polled = await currentConfig(t.api, { ...gateway, registered: again, accessToken: again.accessToken });
        expect(again.config).toEqual(polled.config);
        expect(polled).toEqual(before);
        expect((await ownedDeviceRow(t.db, gateway.deviceId))!.owner_id).toBe(owner.userId);
      });
    });
  });

  describe('fleet defaults', () => {
    let t: TestApp;
    let admin: SignedIn;
    let owner: SignedIn;

    beforeAll(async () => {
      t = await createTestApp({ ...ADMIN_SETTINGS });
      admin = await anAdmin(t);
      owner = await aCustomer(t);
    });
    afterAll(async () => {
      await t.close();
    });

    /** The defaults now and their ETag; fails the test unless the answer is 200. */
    async function currentDefaults(): Promise<{ defaults: DefaultsBody; etag: string }> {
      const { data, response } = await getDefaults(t.api, admin.headers);
      expect(response.status).toBe(200);
      return { defaults: data!, etag: response.headers.get('etag')! };
    }

    /** Everything a refused change of the defaults could have touched. */
    async function defaultsState(gateway: Gateway) {
      return { row: await defaultsRow(t.db), api: await currentDefaults(), gateway: await currentConfig(t.api, gateway) };
    }

    it('GET: 200 with the seeded defaults, revision 1, ETag "defaults-1", as stored', async () => {
      const { data, response } = await getDefaults(t.api, admin.headers);

      expect(response.status).toBe(200);
      expect(response.headers.get('etag')).toBe('"defaults-1"');
      expect(data).toEqual({ revision: 1, ...INITIAL_DEFAULTS, updatedAt: expect.stringMatching(ISO_INSTANT) });
      const row = await defaultsRow(t.db);
      expect(row.settings).toEqual(INITIAL_DEFAULTS);
      expect(data!.updatedAt).toBe(row.updated_at.toISOString());
    });

    it('a customer: 403 FORBIDDEN; anonymous and a device token: 401; nothing changes', async () => {
      const gateway = await aGateway(t);
      const before = await defaultsState(gateway);

      expectProblem(await getDefaults(t.api, owner.headers), 403, 'FORBIDDEN');
      expectProblem(await patchDefaults(t.api, owner.headers, { logLevel: 'debug' }), 403, 'FORBIDDEN');
      expectProblem(await getDefaults(t.api, undefined), 401, 'UNAUTHORIZED');
      expectProblem(await patchDefaults(t.api, undefined, { logLevel: 'debug' }), 401, 'UNAUTHORIZED');
      expectProblem(await getDefaults(t.api, bearer(gateway.accessToken)), 401, 'UNAUTHORIZED');
      expectProblem(await patchDefaults(t.api, bearer(gateway.accessToken), { logLevel: 'debug' }), 401, 'UNAUTHORIZED');

      expect(await defaultsState(gateway)).toEqual(before);
    });

    it('a change raises the revision and every device\'s version; devices keep the keys they override', async () => {
      const plain = await aGateway(t, owner);
      const pinned = await aGateway(t, owner);
      await override(t.api, owner.headers, pinned.deviceId, { telemetryIntervalSec: 30, logLevel: 'error' });
      const plainBefore = await currentConfig(t.api, plain);
      const pinnedBefore = await currentConfig(t.api, pinned);
      expect((await confirmApplied(t.api, plain.accessToken, plainBefore.config.version)).response.status).toBe(204);
      expect((await dashboardDevice(t.api, owner.headers, plain.deviceId)).data!.config.status).toBe('in_sync');
      const { defaults, etag } = await currentDefaults();

      const { data, response } = await patchDefaults(t.api, admin.headers, { telemetryIntervalSec: 120, logLevel: 'info', uploadBatchSize: 80 }, etag);

      expect(response.status).toBe(200);
      const revision = defaults.revision + 1;
      expect(response.headers.get('etag')).toBe(`"defaults-${revision}"`);
      expect(data).toEqual({ ...defaults, revision, telemetryIntervalSec: 120, logLevel: 'info', uploadBatchSize: 80, updatedAt: expect.stringMatching(ISO_INSTANT) });
      expect(await currentDefaults()).toEqual({ defaults: data, etag: `"defaults-${revision}"` });
      const row = await defaultsRow(t.db);
      const { revision: _revision, updatedAt: _updatedAt, ...settingsBefore } = defaults;
      expect(row).toEqual({ settings: { ...settingsBefore, telemetryIntervalSec: 120, logLevel: 'info', uploadBatchSize: 80 }, revision, updated_at: expect.any(Date) });
      expect(row.updated_at.toISOString()).toBe(data!.updatedAt);

      const plainAfter = await gatewayConfig(t.api, plain.accessToken, plainBefore.etag);
      expect(plainAfter.response.status).toBe(200);
      expect(plainAfter.data).toEqual({
        ...plainBefore.config,
        version: plainBefore.config.version + 1,
        telemetryIntervalSec: 120,
        logLevel: 'info',
        uploadBatchSize: 80,
        updatedAt: data!.updatedAt,
      });
      const pinnedAfter = await gatewayConfig(t.api, pinned.accessToken, pinnedBefore.etag);
      expect(pinnedAfter.response.status).toBe(200);
      expect(pinnedAfter.data).toEqual({
        ...pinnedBefore.config,
        version: pinnedBefore.config.version + 1,
        telemetryIntervalSec: 30,
        logLevel: 'error',
        uploadBatchSize: 80,
        updatedAt: data!.updatedAt,
      });
      expect((await dashboardConfig(t.api, owner.headers, pinned.deviceId)).data!.overrides).toEqual({ telemetryIntervalSec: 30, logLevel: 'error' });
      expect((await dashboardDevice(t.api, owner.headers, plain.deviceId)).data!.config).toEqual({
        desiredVersion: plainBefore.config.version + 1,
        appliedVersion: plainBefore.config.version,
        appliedAt: expect.stringMatching(ISO_INSTANT),
        status: 'pending',
      });
      expect((await dashboardConfig(t.api, owner.headers, plain.deviceId)).data!.status).toBe('pending');
    });

    it('a change that restates the current defaults changes no revision and no device\'s version', async () => {
      const gateway = await aGateway(t);
      const before = await defaultsState(gateway);
      const { revision: _revision, updatedAt: _updatedAt, ...settings } = before.api.defaults;

      const { data, response } = await patchDefaults(t.api, admin.headers, settings, before.api.etag);

      expect(response.status).toBe(200);
      expect(data).toEqual(before.api.defaults);
      expect(response.headers.get('etag')).toBe(before.api.etag);
      expect(await defaultsState(gateway)).toEqual(before);
      expect((await gatewayConfig(t.api, gateway.accessToken, before.gateway.etag)).response.status).toBe(304);
    });

    it.each([
      ['telemetryIntervalSec null', 'telemetryIntervalSec', { telemetryIntervalSec: null }],
      ['uploadBatchSize null', 'uploadBatchSize', { uploadBatchSize: null }],
      ['otaCheckIntervalSec null', 'otaCheckIntervalSec', { otaCheckIntervalSec: null }],
      ['otaChannel null', 'otaChannel', { otaChannel: null }],
      ['logLevel null', 'logLevel', { logLevel: null }],
      ['a valid value next to a null', 'logLevel', { uploadBatchSize: 90, logLevel: null }],
      ['an unknown key', 'revision', { revision: 7 }],
      ['telemetryIntervalSec 4', 'telemetryIntervalSec', { telemetryIntervalSec: 4 }],
      ['uploadBatchSize 501', 'uploadBatchSize', { uploadBatchSize: 501 }],
      ['otaCheckIntervalSec 604801', 'otaCheckIntervalSec', { otaCheckIntervalSec: 604_801 }],
      ['otaChannel "nightly"', 'otaChannel', { otaChannel: 'nightly' }],
      ['logLevel 3', 'logLevel', { logLevel: 3 }],
      ['an empty object', '(root)', {}],
    ])('%s: 400 VALIDATION_FAILED naming %s, nothing changes', async (_name, field, body) => {
      const gateway = await aGateway(t);
      const before = await defaultsState(gateway);

      const problem = expectProblem(await patchDefaults(t.api, admin.headers, body), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
      expect(await defaultsState(gateway)).toEqual(before);
    });

    it('a stale If-Match: 412 PRECONDITION_FAILED and nothing changes; the current one: 200', async () => {
      const gateway = await aGateway(t);
      const { etag: stale, defaults } = await currentDefaults();
      const otaCheckIntervalSec = defaults.otaCheckIntervalSec === 7200 ? 3600 : 7200;
      expect((await patchDefaults(t.api, admin.headers, { otaCheckIntervalSec })).response.status).toBe(200);
      const before = await defaultsState(gateway);

      expectProblem(await patchDefaults(t.api, admin.headers, { otaChannel: 'beta' }, stale), 412, 'PRECONDITION_FAILED');
      expect(await defaultsState(gateway)).toEqual(before);

      const { data, response } = await patchDefaults(t.api, admin.headers, { otaChannel: 'beta' }, before.api.etag);
      expect(response.status).toBe(200);
      expect(data).toEqual(expect.objectContaining({ revision: before.api.defaults.revision + 1, otaChannel: 'beta', otaCheckIntervalSec }));
      expect((await currentConfig(t.api, gateway)).config).toEqual(expect.objectContaining({ version: before.gateway.config.version + 1, otaChannel: 'beta' }));
    });

    it('online follows the fleet default telemetry interval for devices that do not override it', async () => {
      const gateway = await aGateway(t, owner);
      await t.db.query(`UPDATE devices SET last_telemetry_at = now() - interval '20 minutes' WHERE device_id = $1`, [gateway.deviceId]);
      const online = async () => (await dashboardDevice(t.api, owner.headers, gateway.deviceId)).data!.online;
      expect((await patchDefaults(t.api, admin.headers, { telemetryIntervalSec: 60 })).response.status).toBe(200);
      expect(await online()).toBe(false);

      expect((await patchDefaults(t.api, admin.headers, { telemetryIntervalSec: 600 })).response.status).toBe(200);
      expect(await online()).toBe(true);
      await override(t.api, owner.headers, gateway.deviceId, { telemetryIntervalSec: 60 });
      expect(await online()).toBe(false);
    });

    it('defaults changed directly in the database reach the next request', async () => {
      const gateway = await aGateway(t);
      const before = await defaultsState(gateway);
      expect((await gatewayConfig(t.api, gateway.accessToken, before.gateway.etag)).response.status).toBe(304);
      const uploadBatchSize = before.api.defaults.uploadBatchSize === 250 ? 240 : 250;

      await t.db.query(`UPDATE config_defaults SET settings = settings || jsonb_build_object('uploadBatchSize', $1::int), revision = revision + 1, updated_at = now()`, [
        uploadBatchSize,
      ]);

      const read = await eventually(
        () => getDefaults(t.api, admin.headers),
        (result) => result.data?.revision !== before.api.defaults.revision,
      );
      expect(read.data).toEqual({ ...before.api.defaults, revision: before.api.defaults.revision + 1, uploadBatchSize, updatedAt: expect.stringMatching(ISO_INSTANT) });
      expect(read.response.headers.get('etag')).toBe(`"defaults-${before.api.defaults.revision + 1}"`);
      const polled = await eventually(
        () => gatewayConfig(t.api, gateway.accessToken, before.gateway.etag),
        (result) => result.response.status !== 304,
      );
      expect(polled.response.status).toBe(200);
      expect(polled.data).toEqual({ ...before.gateway.config, version: before.gateway.config.version + 1, uploadBatchSize, updatedAt: read.data!.updatedAt });
    });
  });

  describe('two instances on one database', () => {
    let a: TestApp;
    let b: TestApp;
    let drop: () => Promise<void>;
    let admin: SignedIn;
    let owner: SignedIn;

    beforeAll(async () => {
      const database = await createTestDatabase();
      drop = database.drop;
      const secrets = sharedSecrets();
      a = await startTestApp(database.url, { ...ADMIN_SETTINGS, ...secrets });
      b = await startTestApp(database.url, secrets);
      admin = await anAdmin(a);
      owner = await aCustomer(a);
    });
    afterAll(async () => {
      await a.close();
      await b.close();
      await drop();
    });

    it('an override set through one instance reaches a gateway polling the other', async () => {
      const gateway = await aGateway(a, owner);
      const before = await currentConfig(b.api, gateway);
      expect((await gatewayConfig(b.api, gateway.accessToken, before.etag)).response.status).toBe(304);

      const changed = await override(a.api, owner.headers, gateway.deviceId, { uploadBatchSize: 25 });

      const polled = await eventually(
        () => gatewayConfig(b.api, gateway.accessToken, before.etag),
        (result) => result.response.status !== 304,
      );
      expect(polled.response.status).toBe(200);
      expect(polled.data).toEqual(changed.config);
      expect(polled.data!.uploadBatchSize).toBe(25);
      expect((await dashboardConfig(b.api, owner.headers, gateway.deviceId)).data).toEqual(changed);
    });

    it('a fleet defaults change through one instance reaches the other', async () => {
      const gateway = await aGateway(a);
      const before = await currentConfig(b.api, gateway);
      const defaultsBefore = (await getDefaults(b.api, admin.headers)).data!;

      const { data: changed, response } = await patchDefaults(a.api, admin.headers, { logLevel: defaultsBefore.logLevel === 'debug' ? 'info' : 'debug' });
      expect(response.status).toBe(200);

      const read = await eventually(
        () => getDefaults(b.api, admin.headers),
        (result) => result.data?.revision !== defaultsBefore.revision,
      );
      expect(read.data).toEqual(changed);
      const polled = await eventually(
        () => gatewayConfig(b.api, gateway.accessToken, before.etag),
        (result) => result.response.status !== 304,
      );
      expect(polled.data).toEqual({ ...before.config, version: before.config.version + 1, logLevel: changed!.logLevel, updatedAt: changed!.updatedAt });
    });

    it('a confirmation received by one instance is what the other instance\'s dashboard shows', async () => {
      const gateway = await aGateway(a, owner);
      const { config } = await currentConfig(b.api, gateway);
      expect((await dashboardConfig(b.api, owner.headers, gateway.deviceId)).data!.status).toBe('pending');

      expect((await confirmApplied(a.api, gateway.accessToken, config.version)).response.status).toBe(204);

      const view = await eventually(
        () => dashboardConfig(b.api, owner.headers, gateway.deviceId),
        (result) => result.data?.status === 'in_sync',
      );
      expect(view.data).toEqual(expect.objectContaining({ appliedVersion: config.version, status: 'in_sync' }));
    });

    it('tokens voided through one instance are refused by the other', async () => {
      const gateway = await aGateway(a);
      await currentConfig(b.api, gateway);
      await currentConfig(b.api, gateway);
      const rotated = await refresh(a.api, gateway.registered.refreshToken);
      expect((await refresh(b.api, rotated.data!.refreshToken)).response.status).toBe(200);

      // Two generations old: reuse.
      expectProblem(await refresh(a.api, gateway.registered.refreshToken), 401, 'INVALID_TOKEN');

      const refused = await eventually(
        () => gatewayConfig(b.api, gateway.accessToken),
        (result) => result.response.status === 401,
      );
      expectProblem(refused, 401, 'UNAUTHORIZED');
    });
  });
});
