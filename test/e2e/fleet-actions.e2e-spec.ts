import { get, type ClientRequest, type IncomingMessage } from 'node:http';
import type { components } from '@device-cloud/client';
import { ExportSlots } from '../../src/modules/telemetry/application/export-slots.js';
import { bearer } from '../support/builders.js';
import { aClaimedDevice, aCustomer, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { liveBytes } from '../support/live-memory.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { DAY, ingest, iso, MINUTE, type TelemetryRecordBody } from '../support/telemetry.js';

/*
 * Actions on every device the device list's filters select: a configuration change
 * (POST /api/v1/dashboard/fleet/config), a command (POST /api/v1/dashboard/fleet/commands) and the
 * records of a range as CSV (GET /api/v1/dashboard/fleet/telemetry). Each applies to the selected
 * devices the caller may act on and counts the others, checks its request before touching any
 * device, and is one audit entry; the export streams a fleet of a thousand devices' day without
 * holding it.
 */

type ConfigBody = components['schemas']['ConfigOverridesPatchRequest'];
type CommandBody = components['schemas']['SendCommandRequest'];
type FleetQuery = { organizationId?: string; q?: string; tag?: string[]; online?: boolean; firmwareVersion?: string; socBelow?: number };
type Headers = { authorization: string };

interface Gateway {
  deviceId: string;
  headers: Headers;
}

interface ConfigRow {
  config_overrides: Record<string, unknown>;
  config_revision: number;
}

interface AuditRow {
  action: string;
  device_id: string | null;
  detail: Record<string, unknown>;
}

describe('fleet actions', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const configureFleet = (who: Headers, query: FleetQuery, body: ConfigBody) => t.api.POST('/api/v1/dashboard/fleet/config', { params: { query }, body, headers: who });
  const commandFleet = (who: Headers, query: FleetQuery, body: CommandBody) => t.api.POST('/api/v1/dashboard/fleet/commands', { params: { query }, body, headers: who });

  async function aGateway(owner: SignedIn): Promise<Gateway> {
    const { body, registered } = await aClaimedDevice(t, owner);
    return { deviceId: body.deviceId, headers: bearer(registered.accessToken) };
  }
  async function tagged(owner: SignedIn, gateway: Gateway, tags: string[]): Promise<void> {
    const { response } = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: gateway.deviceId } }, body: { tags }, headers: owner.headers });
    expect(response.status).toBe(200);
  }
  async function sharedWith(owner: SignedIn, gateway: Gateway, who: SignedIn, role: 'viewer' | 'installer'): Promise<void> {
    const { response } = await t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: gateway.deviceId } }, body: { email: who.email, role }, headers: owner.headers });
    expect(response.status).toBe(201);
  }
  async function configs(gateways: Gateway[]): Promise<ConfigRow[]> {
    const { rows } = await t.db.query<ConfigRow & { device_id: string }>('SELECT device_id, config_overrides, config_revision FROM devices WHERE device_id = ANY($1)', [gateways.map((gateway) => gateway.deviceId)]);
    return gateways.map((gateway) => {
      const { config_overrides, config_revision } = rows.find((row) => row.device_id === gateway.deviceId)!;
      return { config_overrides, config_revision };
    });
  }
  async function auditOf(who: SignedIn, action: string): Promise<AuditRow[]> {
    return (await t.db.query<AuditRow>('SELECT action, device_id, detail FROM audit_log WHERE actor_user_id = $1 AND action = $2 ORDER BY id', [who.userId, action])).rows;
  }
  async function anOrganization(owner: SignedIn) {
    const created = await t.api.POST('/api/v1/organizations', { body: { name: 'Fleet Operators Ltd' }, headers: owner.headers });
    expect(created.response.status).toBe(201);
    const organizationId = created.data!.organizationId;
    const members = {} as Record<'operator' | 'viewer', SignedIn>;
    for (const role of ['operator', 'viewer'] as const) {
      members[role] = await aCustomer(t);
      const invited = await t.api.POST('/api/v1/organizations/{organizationId}/members', { params: { path: { organizationId } }, body: { email: members[role].email, role }, headers: owner.headers });
      expect(invited.response.status).toBe(201);
    }
    const devices: Gateway[] = [];
    for (let i = 0; i < 2; i++) {
      const device = await aRegisteredDevice(t);
      expect((await claim(t, owner, { deviceId: device.body.deviceId, claimCode: device.body.claimCode, organizationId })).response.status).toBe(200);
      devices.push({ deviceId: device.body.deviceId, headers: bearer(device.registered.accessToken) });
    }
    return { organizationId, members, devices };
  }
  async function aKey(who: SignedIn, scope: 'read' | 'write'): Promise<Headers> {
    const { data, response } = await t.api.POST('/api/v1/user/api-keys', { body: { name: `${scope} key`, scope }, headers: who.headers });
    expect(response.status).toBe(201);
    return bearer(data!.key);
  }

  describe('POST /api/v1/dashboard/fleet/config', () => {
    it('changes exactly the devices the filters select, as their PATCH would, and records one fleet.configured entry', async () => {
      const owner = await aCustomer(t);
      const stranger = await aCustomer(t);
      const [roof, porch, garage] = [await aGateway(owner), await aGateway(owner), await aGateway(owner)];
      const strangers = await aGateway(stranger);
      await tagged(owner, roof, ['site-1']);
      await tagged(owner, porch, ['site-1', 'south']);
      await tagged(stranger, strangers, ['site-1']);
      const before = await configs([roof, porch, garage, strangers]);

      const { data, response } = await configureFleet(owner.headers, { tag: ['site-1'] }, { telemetryIntervalSec: 300, logLevel: 'debug' });

      expect(response.status).toBe(200);
      expect(data).toEqual({ devices: 2, skipped: 0 });
      const overrides: ConfigBody = { telemetryIntervalSec: 300, logLevel: 'debug' };
      expect(await configs([roof, porch, garage, strangers])).toEqual([
        { config_overrides: overrides, config_revision: before[0].config_revision + 1 },
        { config_overrides: overrides, config_revision: before[1].config_revision + 1 },
        before[2],
        before[3],
      ]);
      // What the device's own configuration answers, and what its gateway polls.
      const read = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId: porch.deviceId } }, headers: owner.headers });
      expect(read.data!.overrides).toEqual(overrides);
      await eventually(async () => expect((await t.api.GET('/api/v1/device/config', { headers: porch.headers })).data).toMatchObject({ telemetryIntervalSec: 300, logLevel: 'debug' }));
      expect((await t.api.GET('/api/v1/device/config', { headers: garage.headers })).data).not.toMatchObject({ logLevel: 'debug' });

      expect(await auditOf(owner, 'fleet.configured')).toEqual([
        { action: 'fleet.configured', device_id: null, detail: { patch: overrides, devices: 2, skipped: 0, complete: true, filters: { tag: ['site-1'] } } },
      ]);
      expect((await auditOf(owner, 'device.config_changed')).map((row) => row.device_id).sort()).toEqual([roof.deviceId, porch.deviceId].sort());

      // The same change again: both have it already, counted, and nothing new is recorded per device.
      expect((await configureFleet(owner.headers, { tag: ['site-1'] }, overrides)).data).toEqual({ devices: 2, skipped: 0 });
      expect((await configs([roof, porch])).map((row) => row.config_revision)).toEqual([before[0].config_revision + 1, before[1].config_revision + 1]);
      expect(await auditOf(owner, 'device.config_changed')).toHaveLength(2);
      expect(await auditOf(owner, 'fleet.configured')).toHaveLength(2);
    });

    it('skips and counts devices shared with the caller as a viewer; one shared as installer is changed', async () => {
      const owner = await aCustomer(t);
      const caller = await aCustomer(t);
      const [viewed, installed, own] = [await aGateway(owner), await aGateway(owner), await aGateway(caller)];
      await sharedWith(owner, viewed, caller, 'viewer');
      await sharedWith(owner, installed, caller, 'installer');
      const before = await configs([viewed, installed, own]);

      const { data, response } = await configureFleet(caller.headers, {}, { otaChannel: 'beta' });

      expect(response.status).toBe(200);
      expect(data).toEqual({ devices: 2, skipped: 1 });
      const after = await configs([viewed, installed, own]);
      expect(after[0]).toEqual(before[0]);
      expect(after.slice(1).map((row) => row.config_overrides)).toEqual([{ otaChannel: 'beta' }, { otaChannel: 'beta' }]);
      expect((await auditOf(caller, 'fleet.configured')).map((row) => row.detail)).toEqual([{ patch: { otaChannel: 'beta' }, devices: 2, skipped: 1, complete: true, filters: {} }]);
    });

    it('refuses a bad body, or a bad filter, with a 400 naming each field, before any device changes', async () => {
      const owner = await aCustomer(t);
      const gateways = [await aGateway(owner), await aGateway(owner)];
      const before = await configs(gateways);

      const outOfRange = expectProblem(await configureFleet(owner.headers, {}, { telemetryIntervalSec: 0, logLevel: 'loud' } as unknown as ConfigBody), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(outOfRange).sort()).toEqual(['logLevel', 'telemetryIntervalSec']);
      expect(fieldsOf(expectProblem(await configureFleet(owner.headers, {}, { logLevel: 'debug', bogus: 1 } as unknown as ConfigBody), 400, 'VALIDATION_FAILED'))).toEqual(['bogus']);
      expect(fieldsOf(expectProblem(await configureFleet(owner.headers, {}, {}), 400, 'VALIDATION_FAILED'))).toEqual(['(root)']);
      expect(fieldsOf(expectProblem(await configureFleet(owner.headers, { socBelow: 200 }, { logLevel: 'debug' }), 400, 'VALIDATION_FAILED'))).toEqual(['socBelow']);

      expect(await configs(gateways)).toEqual(before);
      expect(await auditOf(owner, 'fleet.configured')).toEqual([]);
      expect(await auditOf(owner, 'device.config_changed')).toEqual([]);
    });

    it("with organizationId: an operator changes the organization's devices; a viewer member has every one skipped", async () => {
      const owner = await aCustomer(t);
      const { organizationId, members, devices } = await anOrganization(owner);
      const personal = await aGateway(owner);
      const before = await configs([...devices, personal]);

      const byViewer = await configureFleet(members.viewer.headers, { organizationId }, { uploadBatchSize: 100 });
      expect(byViewer.data).toEqual({ devices: 0, skipped: 2 });
      expect(await configs([...devices, personal])).toEqual(before);

      const byOperator = await configureFleet(members.operator.headers, { organizationId }, { uploadBatchSize: 100 });
      expect(byOperator.data).toEqual({ devices: 2, skipped: 0 });
      const after = await configs([...devices, personal]);
      expect(after.map((row) => row.config_overrides)).toEqual([{ uploadBatchSize: 100 }, { uploadBatchSize: 100 }, before[2].config_overrides]);
      expect(after[2]).toEqual(before[2]);
      // The owner's filter on another organization (their personal one) selects only their own device.
      expect((await configureFleet(owner.headers, { organizationId: owner.userId }, { uploadBatchSize: 100 })).data).toEqual({ devices: 1, skipped: 0 });
      expect((await auditOf(members.viewer, 'fleet.configured')).map((row) => row.detail)).toEqual([{ patch: { uploadBatchSize: 100 }, devices: 0, skipped: 2, complete: true, filters: { organizationId } }]);
      // Both actions on the organization's devices are in its own log; a stranger naming it reaches nothing and adds nothing there.
      const stranger = await aCustomer(t);
      expect((await configureFleet(stranger.headers, { organizationId }, { uploadBatchSize: 100 })).data).toEqual({ devices: 0, skipped: 0 });
      const log = await t.api.GET('/api/v1/organizations/{organizationId}/audit', { params: { path: { organizationId } }, headers: owner.headers });
      expect(log.data!.items.filter((entry) => entry.action === 'fleet.configured').map((entry) => [entry.actor.userId, entry.detail.devices, entry.detail.skipped])).toEqual([
        [members.operator.userId, 2, 0],
        [members.viewer.userId, 0, 2],
      ]);
    });

    it('takes write API keys; a read key is 403 API_KEY_SCOPE on both fleet changes and changes nothing', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(owner);
      const before = await configs([gateway]);
      const readKey = await aKey(owner, 'read');

      expectProblem(await configureFleet(readKey, {}, { logLevel: 'debug' }), 403, 'API_KEY_SCOPE');
      expectProblem(await commandFleet(readKey, {}, { type: 'ping' }), 403, 'API_KEY_SCOPE');
      expect(await configs([gateway])).toEqual(before);
      expect((await t.db.query('SELECT count(*)::int AS n FROM device_commands WHERE device_id = $1', [gateway.deviceId])).rows[0].n).toBe(0);
      expect(await auditOf(owner, 'fleet.configured')).toEqual([]);

      const writeKey = await aKey(owner, 'write');
      expect((await configureFleet(writeKey, {}, { logLevel: 'debug' })).data).toEqual({ devices: 1, skipped: 0 });
      expect((await commandFleet(writeKey, {}, { type: 'ping' })).data).toEqual({ devices: 1, skipped: 0, queueFull: 0 });
      const [entry] = (await t.db.query<{ actor_api_key_id: string | null }>("SELECT actor_api_key_id FROM audit_log WHERE action = 'fleet.configured' AND actor_user_id = $1", [owner.userId])).rows;
      expect(entry.actor_api_key_id).toEqual(expect.any(String));
    });
  });

  describe('POST /api/v1/dashboard/fleet/commands', () => {
    const poll = (gateway: Gateway) => t.api.GET('/api/v1/device/commands', { headers: gateway.headers });

    it("queues the command for each selected device, which its gateway gets on its next poll; one fleet.commanded entry", async () => {
      const owner = await aCustomer(t);
      const [roof, porch, garage] = [await aGateway(owner), await aGateway(owner), await aGateway(owner)];
      await tagged(owner, roof, ['site-2']);
      await tagged(owner, porch, ['site-2']);

      const { data, response } = await commandFleet(owner.headers, { tag: ['site-2'] }, { type: 'set-log-level', params: { level: 'debug' }, ttlSec: 600 });

      expect(response.status).toBe(200);
      expect(data).toEqual({ devices: 2, skipped: 0, queueFull: 0 });
      for (const gateway of [roof, porch]) {
        const polled = await poll(gateway);
        expect(polled.response.status).toBe(200);
        expect(polled.data!.commands).toEqual([expect.objectContaining({ type: 'set-log-level', params: { level: 'debug' } })]);
        const [pending] = polled.data!.commands;
        expect(new Date(pending.expiresAt).getTime() - new Date(pending.createdAt).getTime()).toBe(600_000);
      }
      expect((await poll(garage)).data!.commands).toEqual([]);

      expect((await auditOf(owner, 'fleet.commanded')).map((row) => row.detail)).toEqual([{ type: 'set-log-level', devices: 2, skipped: 0, queueFull: 0, complete: true, filters: { tag: ['site-2'] } }]);
      expect((await auditOf(owner, 'device.command_sent')).map((row) => row.device_id).sort()).toEqual([roof.deviceId, porch.deviceId].sort());
    });

    it('skips a device whose queue is full and counts it; the others still get the command', async () => {
      const owner = await aCustomer(t);
      const [full, free] = [await aGateway(owner), await aGateway(owner)];
      for (let i = 0; i < 20; i++) {
        const { response } = await t.api.POST('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId: full.deviceId } }, body: { type: 'ping' }, headers: owner.headers });
        expect(response.status).toBe(201);
      }
      expectProblem(await t.api.POST('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId: full.deviceId } }, body: { type: 'ping' }, headers: owner.headers }), 429, 'TOO_MANY_COMMANDS');

      const { data, response } = await commandFleet(owner.headers, {}, { type: 'reboot' });

      expect(response.status).toBe(200);
      expect(data).toEqual({ devices: 1, skipped: 0, queueFull: 1 });
      expect((await poll(full)).data!.commands.map((command) => command.type)).toEqual(Array(20).fill('ping'));
      expect((await poll(free)).data!.commands.map((command) => command.type)).toEqual(['reboot']);
      expect((await auditOf(owner, 'fleet.commanded')).map((row) => row.detail)).toEqual([{ type: 'reboot', devices: 1, skipped: 0, queueFull: 1, complete: true, filters: {} }]);
    });

    it('skips devices shared as viewer and counts them; bad parameters are a 400 and queue nothing', async () => {
      const owner = await aCustomer(t);
      const caller = await aCustomer(t);
      const [viewed, installed] = [await aGateway(owner), await aGateway(owner)];
      await sharedWith(owner, viewed, caller, 'viewer');
      await sharedWith(owner, installed, caller, 'installer');

      const refused = expectProblem(await commandFleet(caller.headers, {}, { type: 'set-log-level', params: { level: 'chatty' } }), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(refused)).toEqual(['params.level']);
      expect(fieldsOf(expectProblem(await commandFleet(caller.headers, {}, { type: 'teleport' } as unknown as CommandBody), 400, 'VALIDATION_FAILED'))).toEqual(['type']);
      const queued = async () => (await t.db.query('SELECT count(*)::int AS n FROM device_commands WHERE device_id = ANY($1)', [[viewed.deviceId, installed.deviceId]])).rows[0].n;
      expect(await queued()).toBe(0);
      expect(await auditOf(caller, 'fleet.commanded')).toEqual([]);

      const { data } = await commandFleet(caller.headers, {}, { type: 'upload-now' });
      expect(data).toEqual({ devices: 1, skipped: 1, queueFull: 0 });
      expect((await poll(installed)).data!.commands.map((command) => command.type)).toEqual(['upload-now']);
      expect((await poll(viewed)).data!.commands).toEqual([]);
    });

    it('with organizationId: reaches the organization\'s devices for an operator, none for a viewer member', async () => {
      const owner = await aCustomer(t);
      const { organizationId, members, devices } = await anOrganization(owner);

      expect((await commandFleet(members.viewer.headers, { organizationId }, { type: 'ping' })).data).toEqual({ devices: 0, skipped: 2, queueFull: 0 });
      expect((await commandFleet(members.operator.headers, { organizationId }, { type: 'ping' })).data).toEqual({ devices: 2, skipped: 0, queueFull: 0 });
      for (const device of devices) expect((await poll(device)).data!.commands.map((command) => command.type)).toEqual(['ping']);
    });
  });

  /**
   * `count` devices of `owner` with a record a minute through the UTC day from `day`, as ingest
   * stores them, and their daily rollup (where an export of whole days reads its columns):
   * written by SQL, since a million records through the API would take minutes. Their ids, in order.
   */
  async function aSeededFleet(owner: SignedIn, prefix: string, count: number, day: number): Promise<string[]> {
    const ids = Array.from({ length: count }, (_, index) => `${prefix}-${owner.userId.slice(0, 8)}-${String(index).padStart(4, '0')}`);
    await t.db.query(
      `INSERT INTO devices (device_id, hardware_id, firmware_version, secret_hash, registered_at, credentials_issued_at, owner_id, claimed_at)
       SELECT id, 'esp32s3-test', '0.1.4', 'not-a-hash', now(), now(), $2, now() FROM unnest($1::text[]) AS id`,
      [ids, owner.userId],
    );
    // The daily rollup from exactly the rows inserted, as the ingest statement writes both; in two halves at once.
    const half = Math.ceil(count / 2);
    await Promise.all(
      [ids.slice(0, half), ids.slice(half)].map((part, index) =>
        t.db.query(
          `WITH inserted AS (
             INSERT INTO telemetry (device_id, battery_id, ts, metrics, received_at)
             SELECT d.id, 'main', m.ts,
                    jsonb_build_object('soc', ((m.n + d.k + $3::int) % 1000)::float8 / 10, 'voltage', 12 + (m.n % 997)::float8 / 1000, 'current', ((m.n * 7 + d.k) % 4000 - 2000)::float8 / 100),
                    m.ts
               FROM unnest($1::text[]) WITH ORDINALITY AS d (id, k)
              CROSS JOIN LATERAL (SELECT $2::timestamptz + n * interval '1 minute' AS ts, n FROM generate_series(0, 1439) AS n) AS m
             RETURNING device_id, battery_id, metrics
           )
           INSERT INTO telemetry_rollup_1d (device_id, battery_id, metric, bucket, count, sum, min, max)
           SELECT device_id, battery_id, m.key, $2::timestamptz, count(*), sum(m.value::float8), min(m.value::float8), max(m.value::float8)
             FROM inserted CROSS JOIN LATERAL jsonb_each_text(inserted.metrics) AS m (key, value)
            GROUP BY 1, 2, 3`,
          [part, new Date(day), index * half],
        ),
      ),
    );
    return ids;
  }

  describe('GET /api/v1/dashboard/fleet/telemetry', () => {
    const exportTelemetry = (who: Headers, query: FleetQuery & { from?: string; to?: string; batteryId?: string; format?: 'csv' }) =>
      t.api.GET('/api/v1/dashboard/fleet/telemetry', { params: { query }, headers: who, parseAs: 'text' });
    const exportEntries = async (who: SignedIn) => (await auditOf(who, 'fleet.exported')).map((row) => row.detail);

    afterEach(async () => {
      await eventually(() => expect(t.app.get(ExportSlots).inUse).toBe(0));
    });

    it("writes every record in the range of every selected device after its deviceId, from the viewer's view of each on; nobody else's", async () => {
      const alice = await aCustomer(t);
      const bob = await aCustomer(t);
      const carol = await aCustomer(t);
      const base = Math.floor(Date.now() / MINUTE) * MINUTE - 30 * MINUTE;
      const sent: Array<{ deviceId: string; record: TelemetryRecordBody }> = [];
      const send = async (gateway: Gateway, records: TelemetryRecordBody[]) => {
        const { response } = await ingest(t.api, gateway.headers.authorization.slice('Bearer '.length), records);
        expect(response.status).toBe(200);
        sent.push(...records.map((record) => ({ deviceId: gateway.deviceId, record })));
      };

      const [first, second, silent] = [await aGateway(alice), await aGateway(alice), await aGateway(alice)];
      await send(first, [
        { ts: iso(base), batteryId: 'main', metrics: { soc: 52.5, voltage: 13.1 } },
        { ts: iso(base), batteryId: 'pack-2', metrics: { soc: 48, voltage: 13.05 } },
        { ts: iso(base + MINUTE), batteryId: 'main', metrics: { soc: 52.25 } },
      ]);
      await send(second, [{ ts: iso(base + 2 * MINUTE), batteryId: 'main', metrics: { temperature: 21.5 } }]);
      // Carol's device, shared with Alice as viewer: hers to read.
      const carols = await aGateway(carol);
      await sharedWith(carol, carols, alice, 'viewer');
      await send(carols, [{ ts: iso(base + 3 * MINUTE), batteryId: 'main', metrics: { soc: 90, current: -1.5 } }]);
      // Bob's device with records in the range: none of them Alice's.
      const bobs = await aGateway(bob);
      await send(bobs, [{ ts: iso(base), batteryId: 'main', metrics: { soc: 10, power: 99 } }]);
      // A device Bob released and Alice then claimed: she sees its records from the release on.
      const device = await aRegisteredDevice(t);
      expect((await claim(t, bob, { deviceId: device.body.deviceId, claimCode: device.body.claimCode })).response.status).toBe(200);
      const resold = { deviceId: device.body.deviceId, headers: bearer(device.registered.accessToken) };
      await send(resold, [{ ts: iso(base + 4 * MINUTE), batteryId: 'main', metrics: { soc: 11, rssi: -70 } }]);
      expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: resold.deviceId } }, headers: bob.headers })).response.status).toBe(204);
      expect((await claim(t, alice, { deviceId: resold.deviceId, claimCode: device.body.claimCode })).response.status).toBe(200);
      // After the release: at most 5 minutes ahead of the server's clock, as ingest allows.
      const afterRelease = Date.now() + MINUTE;
      await send(resold, [{ ts: iso(afterRelease), batteryId: 'main', metrics: { soc: 12 } }]);
      const from = iso(base - 60 * MINUTE);
      const to = iso(afterRelease + MINUTE);

      const { data, response } = await exportTelemetry(alice.headers, { from, to });

      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(response.headers.get('content-disposition')).toBe(`attachment; filename="fleet-telemetry-${from.replace(/[-:]/g, '').replace('.000Z', 'Z')}-${to.replace(/[-:]/g, '').replace('.000Z', 'Z')}.csv"`);
      const theirs = [first, second, silent, carols, resold].map((gateway) => gateway.deviceId);
      const visible = sent.filter(({ deviceId, record }) => theirs.includes(deviceId) && (deviceId !== resold.deviceId || Date.parse(record.ts) >= afterRelease));
      expect(data).toBe(expectedCsv(visible));
      expect(data).toMatch(/^deviceId,ts,batteryId,current,soc,temperature,voltage\r\n/);
      expect(data).not.toContain(bobs.deviceId);
      expect(await exportEntries(alice)).toEqual([{ export: 'telemetry', devices: 5, complete: true, filters: {}, from, to }]);

      // The filters select as the list's; a battery narrows the records and the columns with them.
      await tagged(alice, first, ['site-3']);
      const onePack = await exportTelemetry(alice.headers, { from, to, tag: ['site-3'], batteryId: 'pack-2' });
      expect(onePack.data).toBe(expectedCsv(visible.filter(({ deviceId, record }) => deviceId === first.deviceId && record.batteryId === 'pack-2')));
      expect(onePack.data).toMatch(/^deviceId,ts,batteryId,soc,voltage\r\n/);
      // Bob exports only his own device: the resold one is no longer his to see.
      const bobsExport = await exportTelemetry(bob.headers, { from, to });
      expect(bobsExport.data).toBe(expectedCsv(sent.filter(({ deviceId }) => deviceId === bobs.deviceId)));
      expect((await exportEntries(alice)).at(-1)).toEqual({ export: 'telemetry', devices: 1, complete: true, filters: { tag: ['site-3'] }, from, to, batteryId: 'pack-2' });
    });

    it.each([
      ['from after to', { from: '2026-11-21T12:00:00Z', to: '2026-11-21T11:00:00Z' }, 'from'],
      ['a range of more than 366 days', { from: '2025-01-01T00:00:00Z', to: '2026-01-03T00:00:00Z' }, 'to'],
      ['a from that is no instant', { from: 'yesterday' }, 'from'],
      ['a to without a zone', { to: '2026-11-21T12:00:00' }, 'to'],
      ['a batteryId of another shape', { batteryId: 'main,pack' }, 'batteryId'],
      ['another format', { format: 'xlsx' }, 'format'],
      ['a bad filter', { socBelow: 200 }, 'socBelow'],
    ])('%s: 400 naming the field, and no export runs', async (_name, query, field) => {
      const owner = await aCustomer(t);
      await aGateway(owner);

      const refused = expectProblem(await exportTelemetry(owner.headers, query as FleetQuery & { format?: 'csv' }), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(refused)).toEqual([field]);
      expect(t.app.get(ExportSlots).inUse).toBe(0);
      expect(await exportEntries(owner)).toEqual([]);
    });

    it('takes read API keys', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(owner);
      await ingest(t.api, gateway.headers.authorization.slice('Bearer '.length), [{ ts: iso(Date.now() - MINUTE), metrics: { soc: 50 } }]);

      const { data, response } = await exportTelemetry(await aKey(owner, 'read'), {});

      expect(response.status).toBe(200);
      expect(data).toMatch(new RegExp(`^deviceId,ts,batteryId,soc\r\n${gateway.deviceId},[^,]+,main,50\r\n$`));
    });

    it(
      'a thousand devices × a day of minute records: streamed as it is read, held neither by the server nor by the database while the client waits',
      async () => {
        const DEVICES = 1000;
        const owner = await aCustomer(t);
        const day = Math.floor(Date.now() / DAY) * DAY - DAY;
        const seeding = performance.now();
        const ids = await aSeededFleet(owner, 'mem', DEVICES, day);
        process.stderr.write(`fleet-actions: ${DEVICES * 1440} records seeded in ${Math.round(performance.now() - seeding)} ms\n`);

        const baseline = settledLiveBytes();
        let peak = baseline;
        const sample = () => {
          const started = performance.now();
          peak = Math.max(peak, liveBytes());
          sampler = setTimeout(sample, Math.max(2000, 5 * (performance.now() - started)));
        };
        const began = performance.now();
        let sampler = setTimeout(sample, 500);
        const { request, response } = await streamFleetExport(t, owner, { from: iso(day), to: iso(day + DAY) });
        try {
          expect(response.statusCode).toBe(200);
          // Not read, the answer fills the socket buffers and the export waits with its device's cursor open: no statement runs on it any more.
          await eventually(async () => {
            expect(await exportActivity(t)).toEqual([{ state: 'idle in transaction', idleForASecond: true, query: expect.stringMatching(/^FETCH FORWARD \d+ FROM telemetry_export$/) }]);
          }, 30_000);

          // Counted as they come, kept nowhere: each line must start with the deviceId due, 1,440 lines a device, in deviceId order.
          let bytes = 0;
          let lines = 0;
          let header: string | undefined;
          let rest = '';
          let device = 0;
          let ofDevice = 0;
          let strays = 0;
          for await (const chunk of response as AsyncIterable<Buffer>) {
            bytes += chunk.byteLength;
            const text = rest + chunk.toString('latin1');
            let start = 0;
            for (let end = text.indexOf('\r\n'); end >= 0; end = text.indexOf('\r\n', start)) {
              if (header === undefined) header = text.slice(start, end);
              else {
                if (ofDevice === 1440) [device, ofDevice] = [device + 1, 0];
                if (text.startsWith(`${ids[device]},`, start)) ofDevice += 1;
                else strays += 1;
              }
              lines += 1;
              start = end + 2;
            }
            rest = text.slice(start);
          }
          clearTimeout(sampler);
          const seconds = (performance.now() - began) / 1000;
          const growth = peak - Math.min(baseline, liveBytes());
          process.stderr.write(`fleet-actions: ${bytes} bytes of CSV in ${seconds.toFixed(1)} s; live memory grew at most ${(growth / 1048576).toFixed(1)} MiB while streaming\n`);

          expect({ header, rest }).toEqual({ header: 'deviceId,ts,batteryId,current,soc,voltage', rest: '' });
          expect({ lines, strays, devices: device + 1, ofLast: ofDevice }).toEqual({ lines: 1 + DEVICES * 1440, strays: 0, devices: DEVICES, ofLast: 1440 });
          // Held whole, the answer alone is its size in memory (and each record an object besides): streamed, a few batches at a time.
          expect(bytes).toBeGreaterThan(80_000_000);
          expect(growth).toBeLessThan(bytes / 4);
          await eventually(async () => expect(await exportEntries(owner)).toEqual([{ export: 'telemetry', devices: DEVICES, complete: true, filters: {}, from: iso(day), to: iso(day + DAY) }]));
        } finally {
          clearTimeout(sampler);
          request.destroy();
        }
      },
      // Seeding 1.44 M records and streaming 96 MB: ~50 s alone on a 2-core machine, up to ~3 × that
      // beside two other test files on a slow one. The limit only stops an export that hangs; the
      // test asserts what is sent and what memory it took, not how fast.
      240_000,
    );

    it('a client that goes away mid-stream: the export ends, gives its connection and slot back and is recorded as incomplete', async () => {
      const owner = await aCustomer(t);
      const day = Math.floor(Date.now() / DAY) * DAY - DAY;
      // About 9 MB of CSV: more than the socket buffers hold, so the export is still running when the client goes.
      await aSeededFleet(owner, 'away', 100, day);
      const { request, response } = await streamFleetExport(t, owner, { from: iso(day), to: iso(day + DAY) });
      expect(response.statusCode).toBe(200);
      await (response[Symbol.asyncIterator]() as AsyncIterator<Buffer>).next();
      await eventually(async () => expect(await exportActivity(t)).toHaveLength(1));

      request.destroy();

      await eventually(async () => expect({ sessions: await exportActivity(t), slots: t.app.get(ExportSlots).inUse }).toEqual({ sessions: [], slots: 0 }));
      const [entry] = await eventually(async () => {
        const entries = await exportEntries(owner);
        expect(entries).toEqual([expect.objectContaining({ export: 'telemetry', complete: false })]);
        return entries;
      });
      expect(entry.devices).toBeLessThan(100);
    });
  });
});

/** The CSV a fleet export must write for these records: by deviceId, then (ts, batteryId); columns the metrics they hold, sorted. */
function expectedCsv(records: Array<{ deviceId: string; record: TelemetryRecordBody }>): string {
  const metrics = [...new Set(records.flatMap(({ record }) => Object.keys(record.metrics)))].sort();
  const key = ({ deviceId, record }: { deviceId: string; record: TelemetryRecordBody }) => `${deviceId}\u0000${record.ts}\u0000${record.batteryId ?? 'main'}`;
  const lines = [...records]
    .sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
    .map(({ deviceId, record }) => [deviceId, record.ts, record.batteryId ?? 'main', ...metrics.map((metric) => (metric in record.metrics ? JSON.stringify(record.metrics[metric]) : ''))].join(','));
  return [['deviceId', 'ts', 'batteryId', ...metrics].join(','), ...lines].map((line) => `${line}\r\n`).join('');
}

/**
 * The export read as it comes, on a connection of its own (node:http, no agent): not through
 * t.api, whose middlewares read every answer whole before handing it over.
 */
async function streamFleetExport(t: TestApp, who: SignedIn, query: Record<string, string>): Promise<{ request: ClientRequest; response: IncomingMessage }> {
  const url = new URL('/api/v1/dashboard/fleet/telemetry', t.baseUrl);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  const request = get(url, { headers: who.headers, agent: false });
  const response = await new Promise<IncomingMessage>((resolve, reject) => request.once('response', resolve).once('error', reject));
  return { request, response };
}

/** The export's session as PostgreSQL sees it: what it ran last, and whether it has done nothing since for a second at least. */
async function exportActivity(t: TestApp): Promise<Array<{ state: string; idleForASecond: boolean; query: string }>> {
  const { rows } = await t.db.query<{ state: string; idleForASecond: boolean; query: string }>(
    `SELECT state, clock_timestamp() - state_change >= interval '1 second' AS "idleForASecond", query FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'device-cloud' AND state <> 'idle' AND query LIKE '%telemetry\\_export%'`,
  );
  return rows;
}

/** Live memory once two collections in a row agree: what earlier tests left behind freed first, so it does not count as the export's. */
function settledLiveBytes(): number {
  let previous = liveBytes();
  for (let i = 0; i < 10; i++) {
    const now = liveBytes();
    if (Math.abs(now - previous) < 256 * 1024) return now;
    previous = now;
  }
  return previous;
}
