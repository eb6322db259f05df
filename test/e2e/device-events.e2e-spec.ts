import { randomBytes } from 'node:crypto';
import type { components, paths } from '@device-cloud/client';
import { TelemetryRecordStore } from '../../src/modules/telemetry/domain/telemetry-record.store.js';
import { DEVICE_ONLINE, isDeviceOnline } from '../../src/modules/devices/index.js';
import { bearer } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, aRegisteredDevice, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import { MINUTE, ingest, iso } from '../support/telemetry.js';

type Headers = { authorization: string };
type EventItem = components['schemas']['DeviceEventResponse'];
type EventType = EventItem['type'];
type EventsQuery = NonNullable<paths['/api/v1/dashboard/events']['get']['parameters']['query']>;
type OtaEventBody = components['schemas']['OtaEventRequest'];
type Release = components['schemas']['FirmwareReleaseResponse'];

/** A gateway as the tests drive it: its id, claim code and device access token. */
interface Gateway {
  deviceId: string;
  claimCode: string;
  accessToken: string;
}

/** What an event says, without the parts the service chooses (id, occurredAt). */
interface Said {
  type: EventType;
  deviceId: string;
  data: Record<string, unknown>;
}

/** A device_events row as stored: the owner it notifies is not part of the answer. */
interface StoredEvent {
  id: string;
  type: EventType;
  device_id: string;
  owner_id: string | null;
  occurred_at: Date;
  data: Record<string, unknown>;
}

const EVENT_ID = /^evt_[1-9][0-9]*$/;
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const said = (items: EventItem[]): Said[] => items.map(({ type, deviceId, data }) => ({ type, deviceId, data }));

function listEvents(t: TestApp, who: Headers | undefined, query: EventsQuery = {}) {
  return t.api.GET('/api/v1/dashboard/events', { params: { query }, headers: who });
}

/** One page that must be the whole answer: 200, no next cursor; every item well formed. */
async function eventsSeenBy(t: TestApp, who: SignedIn, query: EventsQuery = {}): Promise<EventItem[]> {
  const { data, response } = await listEvents(t, who.headers, { limit: 200, ...query });
  expect(response.status).toBe(200);
  expect(data!.nextCursor).toBeNull();
  for (const item of data!.items) {
    expect(item.id).toMatch(EVENT_ID);
    expect(item.occurredAt).toMatch(ISO_INSTANT);
  }
  return data!.items;
}

/** The device's stored events, newest first, with the owner each notifies. */
async function storedEvents(t: TestApp, deviceIds: string[]): Promise<StoredEvent[]> {
  const { rows } = await t.db.query<StoredEvent>(
    "SELECT 'evt_' || e.id AS id, e.type, e.device_id, e.owner_id, e.occurred_at, e.data FROM device_events e WHERE e.device_id = ANY($1) ORDER BY e.id DESC",
    [deviceIds],
  );
  return rows;
}

/** The stored events as the dashboard answers them. */
const asItems = (rows: StoredEvent[]): EventItem[] =>
  rows.map((row) => ({ id: row.id, type: row.type, occurredAt: row.occurred_at.toISOString(), deviceId: row.device_id, data: row.data }));

/** Asserts an event happened between two instants of the test's clock (the service shares it). */
function expectWithin(item: EventItem, from: number, to: number): void {
  expect(Date.parse(item.occurredAt)).toBeGreaterThanOrEqual(from - 5);
  expect(Date.parse(item.occurredAt)).toBeLessThanOrEqual(to + 5);
}

async function aGateway(t: TestApp, owner?: SignedIn, hardwareId?: string): Promise<Gateway> {
  const overrides = hardwareId === undefined ? {} : { hardwareId };
  const { body, registered } = owner ? await aClaimedDevice(t, owner, overrides) : await aRegisteredDevice(t, overrides);
  return { deviceId: body.deviceId, claimCode: body.claimCode!, accessToken: registered.accessToken };
}

async function claimed(t: TestApp, who: SignedIn, gateway: Gateway): Promise<void> {
  const { response } = await claim(t, who, { deviceId: gateway.deviceId, claimCode: gateway.claimCode });
  expect(response.status).toBe(200);
}

async function released(t: TestApp, who: SignedIn, gateway: Gateway): Promise<void> {
  const { response } = await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: gateway.deviceId } }, headers: who.headers });
  expect(response.status).toBe(204);
}

async function confirmed(t: TestApp, gateway: Gateway, version: number): Promise<void> {
  const { response } = await t.api.POST('/api/v1/device/config/applied', { body: { version }, headers: bearer(gateway.accessToken) });
  expect(response.status).toBe(204);
}

async function configVersion(t: TestApp, gateway: Gateway): Promise<number> {
  const { data, response } = await t.api.GET('/api/v1/device/config', { headers: bearer(gateway.accessToken) });
  expect(response.status).toBe(200);
  return data!.version;
}

async function overridden(t: TestApp, who: SignedIn, gateway: Gateway, body: components['schemas']['ConfigOverridesPatchRequest']): Promise<void> {
  const { response } = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId: gateway.deviceId } }, body, headers: who.headers });
  expect(response.status).toBe(200);
}

/** An OTA report of an update from 0.1.4 (what the registrations run) to 0.1.50. */
function anOtaEvent(type: OtaEventBody['type'], atMs: number, overrides: Partial<OtaEventBody> = {}): OtaEventBody {
  return { ts: iso(atMs), type, fromVersion: '0.1.4', toVersion: '0.1.50', ...overrides };
}

async function reported(t: TestApp, gateway: Gateway, events: OtaEventBody[]) {
  const { data, response } = await t.api.POST('/api/v1/ota/events', { body: { events }, headers: bearer(gateway.accessToken) });
  expect(response.status).toBe(200);
  return data!;
}

/** What ota.succeeded / ota.failed carry for a reported outcome. */
function outcomeData(event: OtaEventBody) {
  return { fromVersion: event.fromVersion ?? null, toVersion: event.toVersion ?? null, report: event.type, reportedAt: event.ts, errorCode: event.errorCode ?? null };
}

async function telemetrySent(t: TestApp, gateway: Gateway): Promise<void> {
  const { data, response } = await ingest(t.api, gateway.accessToken, [{ ts: iso(Date.now()), metrics: { soc: 80, voltage: 52.1 } }]);
  expect(response.status).toBe(200);
  expect(data!.accepted).toBe(1);
}

describe('GET /api/v1/dashboard/events', () => {
  let t: TestApp;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('every event type from the flow that causes it', () => {
    it('device.claimed when the device changes hands, naming the new owner; the owner claiming again records nothing', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(t);
      const before = Date.now();

      await claimed(t, owner, gateway);
      const after = Date.now();
      await claimed(t, owner, gateway);
      await claimed(t, owner, gateway);

      const items = await eventsSeenBy(t, owner, { deviceId: gateway.deviceId });
      expect(said(items)).toEqual([{ type: 'device.claimed', deviceId: gateway.deviceId, data: { ownerId: owner.userId } }]);
      expectWithin(items[0], before, after);
      const stored = await storedEvents(t, [gateway.deviceId]);
      expect(asItems(stored)).toEqual(items);
      expect(stored.map((row) => row.owner_id)).toEqual([owner.userId]);
    });

    it('device.released, to the owner who released it (owner_id) but without their id in its data, at the release time the device row holds', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(t, owner);

      await released(t, owner, gateway);

      const stored = await storedEvents(t, [gateway.deviceId]);
      expect(stored.map(({ type, data, owner_id }) => ({ type, data, owner_id }))).toEqual([
        { type: 'device.released', data: {}, owner_id: owner.userId },
        { type: 'device.claimed', data: { ownerId: owner.userId }, owner_id: owner.userId },
      ]);
      const { rows } = await t.db.query<{ last_released_at: Date }>('SELECT last_released_at FROM devices WHERE device_id = $1', [gateway.deviceId]);
      expect(stored[0].occurred_at).toEqual(rows[0].last_released_at);
      expect(said(await eventsSeenBy(t, admin, { deviceId: gateway.deviceId }))).toEqual([
        { type: 'device.released', deviceId: gateway.deviceId, data: {} },
        { type: 'device.claimed', deviceId: gateway.deviceId, data: { ownerId: owner.userId } },
      ]);
    });

    it('config.applied {version} each time the gateway confirms a newer version; the same confirmation again, or an older one, records nothing', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(t, owner);
      const first = await configVersion(t, gateway);
      const before = Date.now();

      await confirmed(t, gateway, first);
      const after = Date.now();
      await confirmed(t, gateway, first);
      await overridden(t, owner, gateway, { uploadBatchSize: 100 });
      const second = await configVersion(t, gateway);
      expect(second).toBeGreaterThan(first);
      await confirmed(t, gateway, second);
      await confirmed(t, gateway, second);
      await confirmed(t, gateway, first);

      const items = await eventsSeenBy(t, owner, { deviceId: gateway.deviceId });
      expect(said(items)).toEqual([
        { type: 'config.applied', deviceId: gateway.deviceId, data: { version: second } },
        { type: 'config.applied', deviceId: gateway.deviceId, data: { version: first } },
        { type: 'device.claimed', deviceId: gateway.deviceId, data: { ownerId: owner.userId } },
      ]);
      expectWithin(items[1], before, after);
      const stored = await storedEvents(t, [gateway.deviceId]);
      expect(asItems(stored)).toEqual(items);
      expect(stored.map((row) => row.owner_id)).toEqual([owner.userId, owner.userId, owner.userId]);
    });

    it('ota.succeeded / ota.failed for each newly stored outcome report, with its versions, report, time and error code; other reports and a retried batch record nothing', async () => {
      const owner = await aCustomer(t);
      const gateway = await aGateway(t, owner);
      const now = Date.now();
      const failedInstall = anOtaEvent('install_failed', now - 6 * MINUTE, { errorCode: 'E_FLASH_WRITE', message: 'flash write failed at 0x4000' });
      const failedDownload = anOtaEvent('download_failed', now - 5 * MINUTE, { errorCode: 'E_HTTP_503' });
      const failedVerify = anOtaEvent('verify_failed', now - 4 * MINUTE, { errorCode: 'E_SHA_MISMATCH' });
      const succeeded = anOtaEvent('install_succeeded', now - 2 * MINUTE);
      const rolledBack = anOtaEvent('rolled_back', now - MINUTE, { fromVersion: '0.1.4', errorCode: 'E_BOOT_LOOP' });
      const firstBatch = [
        anOtaEvent('download_started', now - 7 * MINUTE),
        failedInstall,
        failedDownload,
        failedVerify,
        anOtaEvent('download_completed', now - 3 * MINUTE),
        anOtaEvent('install_started', now - 3 * MINUTE + 1000),
        succeeded,
      ];
      const before = Date.now();

      expect(await reported(t, gateway, firstBatch)).toEqual(expect.objectContaining({ accepted: 7, duplicates: 0 }));
      const after = Date.now();
      // The same batch again (a retry after a lost answer), then one that adds a new outcome to it.
      expect(await reported(t, gateway, firstBatch)).toEqual(expect.objectContaining({ accepted: 0, duplicates: 7 }));
      expect(await reported(t, gateway, [succeeded, anOtaEvent('boot_confirmed', now - 90_000), rolledBack])).toEqual(expect.objectContaining({ accepted: 2, duplicates: 1 }));
      expect(await reported(t, gateway, [rolledBack])).toEqual(expect.objectContaining({ accepted: 0, duplicates: 1 }));

      const items = await eventsSeenBy(t, owner, { deviceId: gateway.deviceId });
      const deviceId = gateway.deviceId;
      expect(said(items)).toEqual([
        { type: 'ota.failed', deviceId, data: outcomeData(rolledBack) },
        { type: 'ota.succeeded', deviceId, data: outcomeData(succeeded) },
        { type: 'ota.failed', deviceId, data: outcomeData(failedVerify) },
        { type: 'ota.failed', deviceId, data: outcomeData(failedDownload) },
        { type: 'ota.failed', deviceId, data: outcomeData(failedInstall) },
        { type: 'device.claimed', deviceId, data: { ownerId: owner.userId } },
      ]);
      expect(items[1].data).toEqual({ fromVersion: '0.1.4', toVersion: '0.1.50', report: 'install_succeeded', reportedAt: succeeded.ts, errorCode: null });
      for (const item of items.slice(1, 5)) expectWithin(item, before, after);
      const stored = await storedEvents(t, [deviceId]);
      expect(asItems(stored)).toEqual(items);
      expect(new Set(stored.map((row) => row.owner_id))).toEqual(new Set([owner.userId]));
    });

    it('ota.release_paused on every device the rollout reached, once, when a release with maxFailurePercent pauses itself', async () => {
      const owner = await aCustomer(t);
      const hardwareId = `hw-${randomBytes(4).toString('hex')}`;
      const body = { version: '0.1.50', hardwareId, url: 'https://fw.example.com/0.1.50.bin', sha256: randomBytes(32).toString('hex'), size: 4096, maxFailurePercent: 20 };
      const published = await t.api.POST('/api/v1/admin/firmware', { body, headers: admin.headers });
      expect(published.response.status).toBe(201);
      const release: Release = published.data!;
      const ownedOne = await aGateway(t, owner, hardwareId);
      const gateways = [ownedOne, ...(await Promise.all(Array.from({ length: 10 }, () => aGateway(t, undefined, hardwareId))))];
      const bystander = await aGateway(t, owner);
      for (const gateway of gateways) {
        const { data } = await t.api.GET('/api/v1/ota/latest', { headers: bearer(gateway.accessToken) });
        expect(data!.firmware?.version).toBe('0.1.50');
      }
      const outcome = (gateway: Gateway, type: 'install_succeeded' | 'install_failed') => reported(t, gateway, [anOtaEvent(type, Date.now() - MINUTE)]);
      // 2 installed, 8 failed of 10 finished: 80 % > 20 %, paused by the 10th report. The 11th was offered only.
      await outcome(gateways[1], 'install_succeeded');
      await outcome(gateways[2], 'install_succeeded');
      await outcome(ownedOne, 'install_failed');
      for (const gateway of gateways.slice(3, 9)) await outcome(gateway, 'install_failed');
      expect(await eventsSeenBy(t, admin, { type: 'ota.release_paused' })).toEqual([]);
      const before = Date.now();

      await outcome(gateways[9], 'install_failed');
      const after = Date.now();

      const expectedData = { releaseId: release.id, version: '0.1.50', hardwareId, channel: 'stable', reason: 'failures', maxFailurePercent: 20, minCrashFreePercent: null };
      const paused = await eventsSeenBy(t, admin, { type: 'ota.release_paused' });
      expect(paused.map((item) => item.deviceId).sort()).toEqual(gateways.map((gateway) => gateway.deviceId).sort());
      for (const item of paused) {
        expect(item.data).toEqual(expectedData);
        expectWithin(item, before, after);
      }
      // Neither the status read (which checks the budget again) nor a later failure pauses it twice.
      expect((await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id: release.id } }, headers: admin.headers })).data!.autoPaused).toBe(true);
      await outcome(gateways[10], 'install_failed');
      expect(await eventsSeenBy(t, admin, { type: 'ota.release_paused' })).toEqual(paused);

      const ownersView = await eventsSeenBy(t, owner);
      expect(said(ownersView)).toEqual([
        { type: 'ota.release_paused', deviceId: ownedOne.deviceId, data: expectedData },
        { type: 'ota.failed', deviceId: ownedOne.deviceId, data: expect.objectContaining({ report: 'install_failed' }) },
        { type: 'device.claimed', deviceId: bystander.deviceId, data: { ownerId: owner.userId } },
        { type: 'device.claimed', deviceId: ownedOne.deviceId, data: { ownerId: owner.userId } },
      ]);
      const stored = await storedEvents(t, [...gateways, bystander].map((gateway) => gateway.deviceId));
      expect(stored.filter((row) => row.type === 'ota.release_paused').map((row) => [row.device_id, row.owner_id])).toEqual(
        paused.map((item) => [item.deviceId, item.deviceId === ownedOne.deviceId ? owner.userId : null]),
      );
      expect(stored.map((row) => row.type).sort()).toEqual([...Array(2).fill('device.claimed'), ...Array(9).fill('ota.failed'), ...Array(11).fill('ota.release_paused'), ...Array(2).fill('ota.succeeded')].sort());
    }, 90_000);
  });

  describe('who sees which events', () => {
    it('the owner sees theirs; another customer none; after a release the next owner sees from the release on, the first owner nothing more; an administrator all', async () => {
      const [first, second, stranger] = [await aCustomer(t), await aCustomer(t), await aCustomer(t)];
      const gateway = await aGateway(t, first);
      const deviceId = gateway.deviceId;
      const version = await configVersion(t, gateway);
      await confirmed(t, gateway, version);
      const failed = anOtaEvent('install_failed', Date.now() - 3 * MINUTE, { errorCode: 'E_FLASH_WRITE' });
      await reported(t, gateway, [failed]);
      const firstOwnersEvents: Said[] = [
        { type: 'ota.failed', deviceId, data: outcomeData(failed) },
        { type: 'config.applied', deviceId, data: { version } },
        { type: 'device.claimed', deviceId, data: { ownerId: first.userId } },
      ];

      expect(said(await eventsSeenBy(t, first))).toEqual(firstOwnersEvents);
      expect(said(await eventsSeenBy(t, first, { deviceId }))).toEqual(firstOwnersEvents);
      expect(await eventsSeenBy(t, stranger)).toEqual([]);
      const strangersPage = await listEvents(t, stranger.headers, { deviceId });
      expect({ status: strangersPage.response.status, body: strangersPage.data }).toEqual({ status: 200, body: { items: [], nextCursor: null } });

      await released(t, first, gateway);
      // Reported while nobody owns the gateway: after the release, so the next owner sees it.
      const unowned = anOtaEvent('download_failed', Date.now() - 2 * MINUTE, { errorCode: 'E_HTTP_503' });
      await reported(t, gateway, [unowned]);
      await claimed(t, second, gateway);
      const succeeded = anOtaEvent('install_succeeded', Date.now() - MINUTE);
      await reported(t, gateway, [succeeded]);

      const secondOwnersEvents: Said[] = [
        { type: 'ota.succeeded', deviceId, data: outcomeData(succeeded) },
        { type: 'device.claimed', deviceId, data: { ownerId: second.userId } },
        { type: 'ota.failed', deviceId, data: outcomeData(unowned) },
        { type: 'device.released', deviceId, data: {} },
      ];
      expect(said(await eventsSeenBy(t, second))).toEqual(secondOwnersEvents);
      expect(said(await eventsSeenBy(t, second, { deviceId }))).toEqual(secondOwnersEvents);
      expect(await eventsSeenBy(t, first)).toEqual([]);
      expect(await eventsSeenBy(t, first, { deviceId })).toEqual([]);
      expect(await eventsSeenBy(t, stranger, { deviceId })).toEqual([]);
      const all = await eventsSeenBy(t, admin, { deviceId });
      expect(said(all)).toEqual([...secondOwnersEvents, ...firstOwnersEvents]);
      expect(all).toEqual(asItems(await storedEvents(t, [deviceId])));
      expect(await eventsSeenBy(t, second)).toEqual(all.slice(0, 4));
    });

    it('an administrator sees the events of devices nobody owns and of every owner', async () => {
      const owner = await aCustomer(t);
      const owned = await aGateway(t, owner);
      const unowned = await aGateway(t);
      await confirmed(t, unowned, 1);

      const seen = await eventsSeenBy(t, admin);

      expect(said(seen).filter((item) => item.deviceId === owned.deviceId || item.deviceId === unowned.deviceId)).toEqual([
        { type: 'config.applied', deviceId: unowned.deviceId, data: { version: 1 } },
        { type: 'device.claimed', deviceId: owned.deviceId, data: { ownerId: owner.userId } },
      ]);
      expect(await eventsSeenBy(t, owner)).toEqual(seen.filter((item) => item.deviceId === owned.deviceId));
    });
  });

  describe('filters and paging', () => {
    let owner: SignedIn;
    let one: Gateway;
    let two: Gateway;
    /** Everything the owner may see, newest first, as stored. */
    let all: EventItem[];

    beforeAll(async () => {
      owner = await aCustomer(t);
      one = await aGateway(t, owner);
      two = await aGateway(t, owner);
      await confirmed(t, one, 1);
      await confirmed(t, two, 1);
      const now = Date.now();
      await reported(t, one, [anOtaEvent('install_failed', now - 4 * MINUTE, { errorCode: 'E1' })]);
      await reported(t, two, [anOtaEvent('install_succeeded', now - 3 * MINUTE)]);
      await reported(t, two, [anOtaEvent('rolled_back', now - 2 * MINUTE, { errorCode: 'E2' })]);
      await reported(t, one, [anOtaEvent('install_succeeded', now - MINUTE)]);
      all = asItems(await storedEvents(t, [one.deviceId, two.deviceId]));
      expect(all.map((item) => [item.type, item.deviceId])).toEqual([
        ['ota.succeeded', one.deviceId],
        ['ota.failed', two.deviceId],
        ['ota.succeeded', two.deviceId],
        ['ota.failed', one.deviceId],
        ['config.applied', two.deviceId],
        ['config.applied', one.deviceId],
        ['device.claimed', two.deviceId],
        ['device.claimed', one.deviceId],
      ]);
    });

    it('no filter: every event of the caller, newest first', async () => {
      expect(await eventsSeenBy(t, owner)).toEqual(all);
    });

    it.each([
      ['ota.failed,ota.succeeded', ['ota.failed', 'ota.succeeded']],
      ['device.claimed', ['device.claimed']],
      ['config.applied, device.claimed', ['config.applied', 'device.claimed']],
      ['device.offline,device.released', []],
    ])('?type=%s: only those types, newest first', async (type, types) => {
      expect(await eventsSeenBy(t, owner, { type })).toEqual(all.filter((item) => (types as string[]).includes(item.type)));
    });

    it('?deviceId= only that device; with ?type= both hold', async () => {
      expect(await eventsSeenBy(t, owner, { deviceId: one.deviceId })).toEqual(all.filter((item) => item.deviceId === one.deviceId));
      expect(await eventsSeenBy(t, owner, { deviceId: two.deviceId, type: 'ota.failed,config.applied' })).toEqual(
        all.filter((item) => item.deviceId === two.deviceId && ['ota.failed', 'config.applied'].includes(item.type)),
      );
    });

    /** Walks every page with `limit`, returning the pages. */
    async function walk(query: EventsQuery): Promise<EventItem[][]> {
      const pages: EventItem[][] = [];
      let cursor: string | undefined;
      do {
        const { data, response } = await listEvents(t, owner.headers, cursor === undefined ? query : { ...query, cursor });
        expect(response.status).toBe(200);
        pages.push(data!.items);
        cursor = data!.nextCursor ?? undefined;
        expect(pages.length).toBeLessThanOrEqual(all.length + 1);
      } while (cursor !== undefined);
      return pages;
    }

    it.each([1, 3, 7, 8, 200])('limit %i and the cursors: every event exactly once, newest first, no empty page', async (limit) => {
      const pages = await walk({ limit });

      expect(pages.map((page) => page.length)).toEqual(Array.from({ length: Math.ceil(all.length / limit) }, (_, i) => Math.min(limit, all.length - i * limit)));
      expect(pages.flat()).toEqual(all);
    });

    it('paging keeps the filters: ?type= and ?deviceId= with limit 1', async () => {
      expect((await walk({ limit: 1, type: 'ota.failed,ota.succeeded' })).flat()).toEqual(all.filter((item) => item.type.startsWith('ota.')));
      expect((await walk({ limit: 1, deviceId: two.deviceId })).flat()).toEqual(all.filter((item) => item.deviceId === two.deviceId));
    });

    it('events recorded while paging do not shift the pages still to read', async () => {
      const first = await listEvents(t, owner.headers, { limit: 3 });
      await confirmed(t, one, 1);
      const three = await aGateway(t, owner);
      const rest = await walk({ limit: 50, cursor: first.data!.nextCursor! });

      expect([...first.data!.items, ...rest.flat()]).toEqual(all);
      expect(said((await eventsSeenBy(t, owner)).slice(0, 1))).toEqual([{ type: 'device.claimed', deviceId: three.deviceId, data: { ownerId: owner.userId } }]);
    });

    it.each([
      ['an unknown type', 'device.exploded'],
      ['a known and an unknown type', 'device.claimed,alert.snoozed'],
      ['a type of another case', 'Device.Claimed'],
      ['commas only', ','],
    ])('?type= with %s: 400 VALIDATION_FAILED naming type', async (_name, type) => {
      const problem = expectProblem(await listEvents(t, owner.headers, { type }), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(problem)).toEqual(['type']);
    });

    it.each([
      ['not base64url', 'evt_12!'],
      ['an event id not encoded', 'evt_12'],
      ['the encoding of something else', Buffer.from('2026-01-01T00:00:00.000Z|12', 'utf8').toString('base64url')],
      ['the encoding of evt_0', Buffer.from('evt_0', 'utf8').toString('base64url')],
      ['padded', `${Buffer.from('evt_12', 'utf8').toString('base64url')}==`],
    ])('?cursor= %s: 400 VALIDATION_FAILED naming cursor', async (_name, cursor) => {
      const problem = expectProblem(await listEvents(t, owner.headers, { cursor }), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(problem)).toEqual(['cursor']);
    });

    it.each([0, 201])('?limit=%i: 400 VALIDATION_FAILED naming limit', async (limit) => {
      const problem = expectProblem(await listEvents(t, owner.headers, { limit }), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(problem)).toEqual(['limit']);
    });

    it('?deviceId= that no device could have: 400 VALIDATION_FAILED naming deviceId', async () => {
      const problem = expectProblem(await listEvents(t, owner.headers, { deviceId: 'gw 1/../x' }), 400, 'VALIDATION_FAILED');
      expect(fieldsOf(problem)).toEqual(['deviceId']);
    });

    it('no token, or a device token: 401 UNAUTHORIZED', async () => {
      expectProblem(await listEvents(t, undefined), 401, 'UNAUTHORIZED');
      expectProblem(await listEvents(t, bearer(one.accessToken)), 401, 'UNAUTHORIZED');
    });
  });
});

describe('device.offline and device.online', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ OFFLINE_CHECK_INTERVAL_MS: '300' });
  });
  afterAll(async () => {
    await t.close();
  });
  // A test that moved the service's clock moves it back: later sign-ins would be from the future.
  afterEach(() => {
    t.clock.reset();
  });

  async function offlineColumns(deviceId: string) {
    const { rows } = await t.db.query<{ last_telemetry_at: Date | null; offline_since: Date | null }>('SELECT last_telemetry_at, offline_since FROM devices WHERE device_id = $1', [
      deviceId,
    ]);
    return rows[0];
  }

  /**
   * A device on the shortest interval (5 s) that is made to go silent for 3 of them on the
   * service's clock, again and again: each device.offline of it shows that a check ran after the
   * clock was moved.
   */
  async function aMarker(owner: SignedIn) {
    const marker = await aGateway(t, owner);
    await overridden(t, owner, marker, { telemetryIntervalSec: 5 });
    let marked = 0;
    return {
      /** Its telemetry now: the next silence starts here. */
      heard: () => telemetrySent(t, marker),
      /** Waits for its next device.offline: a check that ran since. */
      checked: async () => {
        marked++;
        await eventually(async () => expect(await eventsSeenBy(t, owner, { deviceId: marker.deviceId, type: 'device.offline' })).toHaveLength(marked));
      },
    };
  }

  /** The owner's devices as the dashboard lists them (with `online`, or only those meeting it), as deviceId → online. */
  async function listedOnline(owner: SignedIn, online?: boolean): Promise<Record<string, boolean>> {
    const { data, response } = await t.api.GET('/api/v1/dashboard/devices', { params: { query: online === undefined ? {} : { online } }, headers: owner.headers });
    expect(response.status).toBe(200);
    return Object.fromEntries(data!.items.map((item) => [item.deviceId, item.online]));
  }

  it('device_online in SQL says what isDeviceOnline says, at the edges of the window', async () => {
    const now = new Date('2026-03-01T12:00:00.000Z');
    const cases: Array<[number | null, number]> = [[null, 60], [-180_000, 60], [-180_001, 60], [-179_999, 60], [-900_000, 300], [-900_001, 300], [1_000, 60]];
    const answers = [];
    for (const [offset, intervalSec] of cases) {
      const last = offset === null ? null : new Date(now.getTime() + offset);
      const { rows } = await t.db.query<{ online: boolean }>(`SELECT ${DEVICE_ONLINE}($1::timestamptz, $2::int, $3::timestamptz) AS online`, [last, intervalSec, now]);
      expect(rows[0].online).toBe(isDeviceOnline(last, intervalSec, now));
      answers.push(rows[0].online);
    }
    expect(answers).toEqual([false, true, false, true, true, false, true]);
  });

  it('one rule: a gateway heard from but sending no telemetry is listed offline and gets device.offline; one sending telemetry is online and gets none', async () => {
    const owner = await aCustomer(t);
    const silent = await aGateway(t, owner);
    const reporting = await aGateway(t, owner);
    await telemetrySent(t, silent);
    await telemetrySent(t, reporting);
    // Its last telemetry three 60 s intervals and more ago; then it confirms its configuration, which counts as contact.
    await t.db.query("UPDATE devices SET last_telemetry_at = now() - interval '10 minutes' WHERE device_id = $1", [silent.deviceId]);
    await confirmed(t, silent, await configVersion(t, silent));
    const { rows } = await t.db.query<{ seen_recently: boolean }>("SELECT last_seen_at > now() - interval '1 minute' AS seen_recently FROM devices WHERE device_id = $1", [silent.deviceId]);
    expect(rows[0].seen_recently).toBe(true);

    await eventually(async () => expect(await eventsSeenBy(t, owner, { deviceId: silent.deviceId, type: 'device.offline' })).toHaveLength(1), 30_000);

    expect(await listedOnline(owner)).toEqual({ [silent.deviceId]: false, [reporting.deviceId]: true });
    expect(await listedOnline(owner, true)).toEqual({ [reporting.deviceId]: true });
    expect(await listedOnline(owner, false)).toEqual({ [silent.deviceId]: false });
    const { data: detail } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: silent.deviceId } }, headers: owner.headers });
    expect(detail!.online).toBe(false);
    expect(await eventsSeenBy(t, owner, { deviceId: reporting.deviceId, type: 'device.offline' })).toEqual([]);
  });

  it('one device.offline after 3 telemetry intervals of silence, one device.online at the next telemetry, and no new device.offline while telemetry flows', async () => {
    const owner = await aCustomer(t);
    const gateway = await aGateway(t, owner);
    // Same silence on the fleet default (60 s): not offline within this test.
    const onDefault = await aGateway(t, owner);
    // Never sent telemetry: never offline.
    const silentFromBirth = await aGateway(t, owner);
    await overridden(t, owner, gateway, { telemetryIntervalSec: 5 });
    const marker = await aMarker(owner);
    await telemetrySent(t, gateway);
    await telemetrySent(t, onDefault);
    const lastTelemetryAt = (await offlineColumns(gateway.deviceId)).last_telemetry_at!;
    const deviceId = gateway.deviceId;
    const offlineOf = () => eventsSeenBy(t, owner, { deviceId, type: 'device.offline' });
    t.clock.advanceMs(16_000);

    const [offline] = await eventually(async () => {
      const items = await offlineOf();
      expect(items).toHaveLength(1);
      return items;
    }, 30_000);

    expect(offline.data).toEqual({ lastTelemetryAt: lastTelemetryAt.toISOString() });
    expect(Date.parse(offline.occurredAt) - lastTelemetryAt.getTime()).toBeGreaterThanOrEqual(15_000);
    expect((await offlineColumns(deviceId)).offline_since!.toISOString()).toBe(offline.occurredAt);
    // Checks go on: a device still silent, for 3 more intervals, is not reported offline again.
    await marker.heard();
    t.clock.advanceMs(16_000);
    await marker.checked();
    expect(await offlineOf()).toEqual([offline]);

    const before = t.clock.now().getTime();
    await telemetrySent(t, gateway);
    const after = t.clock.now().getTime();

    const [online, ...older] = await eventually(async () => {
      const items = await eventsSeenBy(t, owner, { deviceId });
      expect(items[0]?.type).toBe('device.online');
      return items;
    }, 5_000);
    expect({ type: online.type, deviceId: online.deviceId, offlineSince: Date.parse(String(online.data.offlineSince)) }).toEqual({
      type: 'device.online',
      deviceId,
      offlineSince: Date.parse(offline.occurredAt),
    });
    expect(said(older)).toEqual([
      { type: 'device.offline', deviceId, data: { lastTelemetryAt: lastTelemetryAt.toISOString() } },
      { type: 'device.claimed', deviceId, data: { ownerId: owner.userId } },
    ]);
    expectWithin(online, before, after + 1000);
    expect((await offlineColumns(deviceId)).offline_since).toBeNull();

    // Telemetry keeps coming every 8 s of the clock (under 3 intervals), with checks in between: no new transition either way.
    for (let i = 0; i < 3; i++) {
      await marker.heard();
      await telemetrySent(t, gateway);
      t.clock.advanceMs(8_000);
      await telemetrySent(t, gateway);
      t.clock.advanceMs(8_000);
      await marker.checked();
    }

    const stored = await storedEvents(t, [deviceId, onDefault.deviceId, silentFromBirth.deviceId]);
    expect(stored.map((row) => [row.type, row.device_id, row.owner_id])).toEqual([
      ['device.online', deviceId, owner.userId],
      ['device.offline', deviceId, owner.userId],
      ['device.claimed', silentFromBirth.deviceId, owner.userId],
      ['device.claimed', onDefault.deviceId, owner.userId],
      ['device.claimed', deviceId, owner.userId],
    ]);
    // The instant in the form of every other instant the API writes (occurredAt, lastTelemetryAt).
    expect(online.data).toEqual({ offlineSince: offline.occurredAt });
  }, 90_000);

  /** Marks the device offline as the offline check does, as of `at`. */
  async function markedOffline(deviceId: string, at: Date): Promise<void> {
    await t.db.query('UPDATE devices SET offline_since = $2 WHERE device_id = $1', [deviceId, at]);
  }

  const onlineEvents = (deviceId: string) => storedEvents(t, [deviceId]).then((rows) => rows.filter((row) => row.type === 'device.online'));

  async function dispatchJobs(eventId: string): Promise<number> {
    const { rows } = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'events.dispatch' AND data->>'eventId' = $1", [eventId]);
    return rows[0].n;
  }

  it('device.online commits with its dispatch job, in one transaction, before the upload is answered', async () => {
    const owner = await aCustomer(t);
    const gateway = await aGateway(t, owner);
    await telemetrySent(t, gateway);
    const offlineSince = new Date(Date.now() - 10 * MINUTE);
    await markedOffline(gateway.deviceId, offlineSince);

    // Jobs cannot be written meanwhile: the transaction that records the event waits at its job.
    const jobsLocked = await t.db.connect();
    let answered = false;
    let upload: Promise<void> | undefined;
    try {
      await jobsLocked.query('BEGIN');
      await jobsLocked.query('LOCK TABLE pgboss.job IN SHARE MODE');
      upload = telemetrySent(t, gateway).finally(() => (answered = true));
      await eventually(async () => {
        const { rows } = await t.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks held JOIN pg_locks waiting ON waiting.pid = held.pid AND NOT waiting.granted
            WHERE held.relation = 'device_events'::regclass AND held.granted`,
        );
        expect(rows[0].n).toBe(1);
      });
      // The event is not there without its job, and the upload waits for both.
      expect(await onlineEvents(gateway.deviceId)).toEqual([]);
      expect(answered).toBe(false);
    } finally {
      await jobsLocked.query('ROLLBACK');
      jobsLocked.release();
    }
    await upload;

    const [online, ...more] = await onlineEvents(gateway.deviceId);
    expect(more).toEqual([]);
    expect({ ownerId: online.owner_id, data: online.data }).toEqual({ ownerId: owner.userId, data: { offlineSince: offlineSince.toISOString() } });
    expect(await dispatchJobs(online.id)).toBe(1);
    expect((await offlineColumns(gateway.deviceId)).offline_since).toBeNull();
  });

  it('an upload whose statement fails records no device.online and leaves the device marked offline', async () => {
    const owner = await aCustomer(t);
    const gateway = await aGateway(t, owner);
    await telemetrySent(t, gateway);
    const offlineSince = new Date(Date.now() - 10 * MINUTE);
    await markedOffline(gateway.deviceId, offlineSince);
    const writer = t.app.get(TelemetryRecordStore);
    // Two values whose sum overflows float8 in one rollup slot: the ingest statement fails (admit would have refused them).
    const slot = Math.floor((Date.now() - 20 * MINUTE) / 300_000) * 300_000;
    const poison = [0, 1000].map((offset) => ({ ts: new Date(slot + offset), batteryId: 'main', metrics: { voltage: 1.7e308 } }));

    await expect(writer.write(gateway.deviceId, poison, new Date())).rejects.toMatchObject({ code: '22003' });

    expect(await onlineEvents(gateway.deviceId)).toEqual([]);
    expect((await offlineColumns(gateway.deviceId)).offline_since).toEqual(offlineSince);
    // The next upload that is stored brings it back.
    await telemetrySent(t, gateway);
    const [online] = await onlineEvents(gateway.deviceId);
    expect(await dispatchJobs(online.id)).toBe(1);
  });
});
