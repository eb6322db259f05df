import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { loadEnv } from '../../../config/env.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { encodeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { FleetDefaultsStore } from '../../devices/application/fleet-defaults.js';
import { INITIAL_FLEET_DEFAULTS, type FleetDefaults } from '../../devices/domain/device-config.js';
import { ShareRoleError } from '../../sharing/index.js';
import type { Viewer } from '../domain/dashboard-queries.js';
import { ExportSlots } from '../../telemetry/application/export-slots.js';
import { TelemetryHistoryService } from '../../telemetry/application/telemetry-history.service.js';
import { pointsOf } from '../../telemetry/index.js';
import { DashboardService } from './dashboard.service.js';
import { InMemoryDashboardQueries } from '../../../../test/fakes/dashboard/in-memory-dashboard-queries.js';
import { InMemoryTelemetryHistoryQueries } from '../../../../test/fakes/telemetry/in-memory-telemetry-history-queries.js';
import { buckets, raw, refusedFields, withPoints } from '../../../../test/support/history-answers.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const DEFAULTS: FleetDefaults = { settings: INITIAL_FLEET_DEFAULTS, revision: 1, updatedAt: new Date(0) };

/** The defaults as stored; the dashboard only reads them. */
class StoredFleetDefaults extends FleetDefaultsStore {
  async current(): Promise<FleetDefaults> {
    return DEFAULTS;
  }
  async update(): Promise<FleetDefaults> {
    throw new Error('the dashboard never changes fleet defaults');
  }
}

const ALICE: Viewer = { userId: 'a1a1a1a1-0000-4000-8000-000000000001', isAdmin: false };
const BOB: Viewer = { userId: 'b2b2b2b2-0000-4000-8000-000000000002', isAdmin: false };
const ADMIN: Viewer = { userId: 'c3c3c3c3-0000-4000-8000-000000000003', isAdmin: true };

function setUp() {
  const queries = new InMemoryDashboardQueries();
  const telemetry = new InMemoryTelemetryHistoryQueries();
  const clock = new FixedClock(NOW);
  const slots = new ExportSlots(loadEnv({ NODE_ENV: 'test', DB_POOL_SIZE: '10', EXPORT_MAX_PER_USER: '2', EXPORT_MAX_CONCURRENT: '3' }));
  const service = new DashboardService(queries, new TelemetryHistoryService(telemetry, clock, slots), clock, new StoredFleetDefaults());
  return { queries, telemetry, clock, service };
}

const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);
const iso = (offsetMs: number) => at(offsetMs).toISOString();

describe('DashboardService', () => {
  describe('visibility: a device the viewer may not see answers exactly like one that does not exist', () => {
    it('the owner and any administrator see a device; another customer gets NotFound, as for an unknown id', async () => {
      const { queries, service } = setUp();
      const device = queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });

      expect(await service.device(ALICE, 'gw-0001')).toBe(device);
      expect(await service.device(ADMIN, 'gw-0001')).toBe(device);
      await expect(service.device(BOB, 'gw-0001')).rejects.toThrow(NotFoundError);
      await expect(service.device(BOB, 'gw-9999')).rejects.toThrow(NotFoundError);
      await expect(service.visibility(BOB, 'gw-0001')).rejects.toThrow(NotFoundError);
      expect(await service.visibility(ALICE, 'gw-0001')).toEqual({ visible_since: null, access: 'owner' });
    });

    it('manageable: the owner may change a device; one who sees it as a viewer gets SHARE_ROLE, anyone else NotFound', async () => {
      const { queries, service } = setUp();
      queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });
      queries.add({ device_id: 'gw-0002', owner_id: ALICE.userId, access: 'viewer' });
      expect(await service.manageable(ALICE, 'gw-0001')).toEqual({ owner_id: ALICE.userId, access: 'owner' });
      await expect(service.manageable(ALICE, 'gw-0002')).rejects.toThrow(ShareRoleError);
      await expect(service.manageable(BOB, 'gw-0001')).rejects.toThrow(NotFoundError);
    });

    it('an unclaimed device: only administrators see it', async () => {
      const { queries, service } = setUp();
      queries.add({ device_id: 'gw-0001' });

      await expect(service.device(ALICE, 'gw-0001')).rejects.toThrow(NotFoundError);
      expect((await service.device(ADMIN, 'gw-0001')).device_id).toBe('gw-0001');
    });

    it('visibleFrom: a later owner sees nothing from before visible_since; administrators and first owners see the range asked', () => {
      const { service } = setUp();
      const since = at(-2 * HOUR);

      expect(service.visibleFrom(ALICE, { visible_since: since }, at(-DAY))).toEqual(since);
      expect(service.visibleFrom(ALICE, { visible_since: since }, null)).toEqual(since);
      expect(service.visibleFrom(ALICE, { visible_since: since }, at(-HOUR))).toEqual(at(-HOUR));
      expect(service.visibleFrom(ADMIN, { visible_since: since }, at(-DAY))).toEqual(at(-DAY));
      expect(service.visibleFrom(ALICE, { visible_since: null }, at(-DAY))).toEqual(at(-DAY));
      expect(service.visibleFrom(ALICE, { visible_since: null }, null)).toBeNull();
    });
  });

  describe('devices: keyset pages by deviceId', () => {
    it('pages of `limit` with a cursor while more remain; following the cursors lists every visible device once, in order', async () => {
      const { queries, service } = setUp();
      for (const id of ['gw-0005', 'gw-0002', 'gw-0004', 'gw-0001', 'gw-0003']) queries.add({ device_id: id, owner_id: ALICE.userId });
      queries.add({ device_id: 'gw-0000', owner_id: BOB.userId });

      const first = await service.devices(ALICE, 2, undefined);
      const second = await service.devices(ALICE, 2, first.nextCursor!);
      const third = await service.devices(ALICE, 2, second.nextCursor!);

      expect([first, second, third].map((page) => page.items.map((row) => row.device_id))).toEqual([
        ['gw-0001', 'gw-0002'],
        ['gw-0003', 'gw-0004'],
        ['gw-0005'],
      ]);
      expect(first.nextCursor).toBe(encodeCursor('gw-0002'));
      expect(third.nextCursor).toBeNull();
    });

    it('exactly `limit` devices: one page, no cursor', async () => {
      const { queries, service } = setUp();
      queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });
      queries.add({ device_id: 'gw-0002', owner_id: ALICE.userId });

      expect(await service.devices(ALICE, 2, undefined)).toEqual({ items: [expect.objectContaining({ device_id: 'gw-0001' }), expect.objectContaining({ device_id: 'gw-0002' })], nextCursor: null });
    });

    it('an administrator pages through every device', async () => {
      const { queries, service } = setUp();
      queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });
      queries.add({ device_id: 'gw-0002', owner_id: BOB.userId });
      queries.add({ device_id: 'gw-0003' });

      expect((await service.devices(ADMIN, 50, undefined)).items.map((row) => row.device_id)).toEqual(['gw-0001', 'gw-0002', 'gw-0003']);
    });

    it.each([
      ['not base64url', 'not a cursor!'],
      ['padded', `${encodeCursor('gw-0001')}=`],
      ['not a device id', encodeCursor('../etc/passwd')],
      ['empty', ''],
    ])('a cursor that is %s: refused naming cursor', async (_name, cursor) => {
      const { service } = setUp();

      expect(await refusedFields(service.devices(ALICE, 10, cursor))).toEqual(['cursor']);
    });
  });

  describe('devices: filters', () => {
    it('tags: repeated or comma-separated, lower-cased, every one required', async () => {
      const { queries, service } = setUp();
      queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId, tags: ['roof', 'site-7'] });
      queries.add({ device_id: 'gw-0002', owner_id: ALICE.userId, tags: ['roof'] });

      const ids = async (tag: string[]) => (await service.devices(ALICE, 10, undefined, { tag })).items.map((row) => row.device_id);

      expect(await ids(['roof'])).toEqual(['gw-0001', 'gw-0002']);
      expect(await ids(['ROOF', 'site-7'])).toEqual(['gw-0001']);
      expect(await ids(['roof,Site-7'])).toEqual(['gw-0001']);
    });

    it('online: the filter and every row\'s online field are computed at one instant', async () => {
      const { queries, service } = setUp();
      queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId, last_telemetry_at: at(-180_000) });
      queries.add({ device_id: 'gw-0002', owner_id: ALICE.userId, last_telemetry_at: at(-181_000) });
      queries.add({ device_id: 'gw-0003', owner_id: ALICE.userId, last_telemetry_at: at(-181_000), config_overrides: { telemetryIntervalSec: 61 } });

      const online = await service.devices(ALICE, 10, undefined, { online: true });
      const offline = await service.devices(ALICE, 10, undefined, { online: false });

      expect(online.items.map((row) => [row.device_id, row.online])).toEqual([['gw-0001', true], ['gw-0003', true]]);
      expect(offline.items.map((row) => [row.device_id, row.online])).toEqual([['gw-0002', false]]);
    });

    it('bad values are refused naming each', async () => {
      const { service } = setUp();

      expect(await refusedFields(service.devices(ALICE, 10, undefined, { q: '  ', tag: ['a b'], firmwareVersion: 'latest', socBelow: 101 }))).toEqual(['q', 'tag', 'firmwareVersion', 'socBelow']);
      expect(await refusedFields(service.devices(ALICE, 10, undefined, { tag: Array.from({ length: 21 }, (_, i) => `t${i}`) }))).toEqual(['tag']);
    });
  });

  describe('isOnline: telemetry within three telemetry intervals', () => {
    it.each([
      ['telemetry 3 fleet-default intervals ago (180 s): online', -180_000, {}, true],
      ['telemetry 181 s ago with the 60 s default: offline', -181_000, {}, false],
      ['telemetry 29 min ago with a 600 s override: online', -29 * MINUTE, { telemetryIntervalSec: 600 }, true],
      ['telemetry 31 min ago with a 600 s override: offline', -31 * MINUTE, { telemetryIntervalSec: 600 }, false],
    ])('%s', async (_name, telemetryOffset, overrides, online) => {
      const { queries, service } = setUp();
      const device = queries.add({ device_id: 'gw-0001', last_telemetry_at: at(telemetryOffset), config_overrides: overrides });

      expect(service.isOnline(device, await service.fleetDefaults())).toBe(online);
    });

    it('never sent telemetry: offline', async () => {
      const { queries, service } = setUp();

      expect(service.isOnline(queries.add({ device_id: 'gw-0001' }), DEFAULTS)).toBe(false);
    });

    it('polling without telemetry: offline, however recently it was seen', async () => {
      const { queries, service } = setUp();

      expect(service.isOnline(queries.add({ device_id: 'gw-0001', last_seen_at: at(-1_000), last_telemetry_at: at(-181_000) }), DEFAULTS)).toBe(false);
      expect(service.isOnline(queries.add({ device_id: 'gw-0002', last_seen_at: at(-1_000) }), DEFAULTS)).toBe(false);
    });
  });

  describe('history', () => {
    function withReadings() {
      const context = setUp();
      context.queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });
      return context;
    }

    it.each([
      ['metrics empty', { metrics: ' , ' }, 'metrics'],
      ['metrics with a bad name', { metrics: 'soc,bad name' }, 'metrics'],
      ['65 metrics', { metrics: Array.from({ length: 65 }, (_, i) => `m${i}`).join(',') }, 'metrics'],
      ['batteryId with a slash', { batteryId: 'a/b' }, 'batteryId'],
      ['bucket 0', { bucket: '0' }, 'bucket'],
      ['from after to', { from: iso(-HOUR), to: iso(-2 * HOUR) }, 'from'],
      ['a cursor without bucket=raw', { cursor: encodeTimeCursor(at(-HOUR), 'main') }, 'cursor'],
      ['a raw cursor that is no cursor', { bucket: 'raw', cursor: 'abc$' }, 'cursor'],
      ['a raw cursor holding a bad batteryId', { bucket: 'raw', cursor: encodeTimeCursor(at(-HOUR), 'a/b') }, 'cursor'],
    ])('%s: refused naming the field, before the device is looked up (a 400 even for a device not visible)', async (_name, params, field) => {
      const { telemetry, service } = withReadings();

      expect(await refusedFields(service.history(ALICE, 'gw-0001', params))).toEqual([field]);
      expect(await refusedFields(service.history(BOB, 'gw-0001', params))).toEqual([field]);
      expect(telemetry.seriesQueries).toEqual([]);
      expect(telemetry.rawQueries).toEqual([]);
    });

    it('a device the viewer cannot see: NotFound, and no telemetry is read', async () => {
      const { telemetry, service } = withReadings();

      await expect(service.history(BOB, 'gw-0001', {})).rejects.toThrow(NotFoundError);
      await expect(service.history(BOB, 'gw-0001', { bucket: 'raw' })).rejects.toThrow(NotFoundError);
      expect([...telemetry.seriesQueries, ...telemetry.rawQueries]).toEqual([]);
    });

    it('a later owner: the query starts at visible_since; the answer still names the range asked', async () => {
      const { queries, telemetry, service } = setUp();
      queries.add({ device_id: 'gw-0002', owner_id: ALICE.userId, visible_since: at(-3 * HOUR) });
      telemetry.add('gw-0002', { ts: at(-5 * HOUR), batteryId: 'main', metrics: { soc: 10 } }, { ts: at(-HOUR), batteryId: 'main', metrics: { soc: 90 } });

      const history = buckets(await service.history(ALICE, 'gw-0002', { bucket: '3600' }));
      const asAdmin = buckets(await service.history(ADMIN, 'gw-0002', { bucket: '3600' }));

      expect(telemetry.seriesQueries.map((query) => query.from)).toEqual([at(-3 * HOUR), at(-DAY)]);
      expect([history.from, history.to]).toEqual([at(-DAY), NOW]);
      expect(withPoints(history).series).toEqual([
        { metric: 'soc', batteryId: 'main', points: [{ ts: iso(-HOUR), avg: 90, min: 90, max: 90, count: 1 }] },
      ]);
      expect(pointsOf(asAdmin.series[0]).map((point) => point.avg)).toEqual([10, 90]);
    });

    it('a range wholly before visible_since: empty series, no query', async () => {
      const { queries, telemetry, service } = setUp();
      queries.add({ device_id: 'gw-0002', owner_id: ALICE.userId, visible_since: at(-HOUR) });

      const history = buckets(await service.history(ALICE, 'gw-0002', { from: iso(-3 * HOUR), to: iso(-2 * HOUR) }));

      expect(history.series).toEqual([]);
      expect(telemetry.seriesQueries).toEqual([]);
    });

    describe('bucket=raw: the records themselves, ascending by (ts, batteryId), in pages', () => {
      /** `count` instants `stepMs` apart from an hour ago, a record of two batteries at each. */
      function withRecords(count: number, stepMs = MINUTE) {
        const context = withReadings();
        for (let i = 0; i < count; i++) {
          for (const batteryId of ['main', 'pack-2']) context.telemetry.add('gw-0001', { ts: at(-HOUR + i * stepMs), batteryId, metrics: { soc: i } });
        }
        return context;
      }

      it('a later owner: records from visible_since on', async () => {
        const { queries, telemetry, service } = withRecords(3);
        queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId, visible_since: at(-HOUR + 90_000) });

        const page = raw(await service.history(ALICE, 'gw-0001', { bucket: 'raw' }));

        expect(telemetry.rawQueries[0].from).toEqual(at(-HOUR + 90_000));
        expect(page.records.map((record) => record.ts)).toEqual([at(-HOUR + 2 * MINUTE), at(-HOUR + 2 * MINUTE)]);
      });
    });
  });

  describe('export: every record of the range, in batches, holding a slot until closed', () => {
    it('a device the viewer cannot see: NotFound, nothing opened, no slot taken', async () => {
      const { queries, telemetry, service } = setUp();
      queries.add({ device_id: 'gw-0001', owner_id: ALICE.userId });

      for (let i = 0; i < 3; i++) await expect(service.export(BOB, 'gw-0001', {})).rejects.toThrow(NotFoundError);
      expect(telemetry.exportQueries).toEqual([]);
      const mine = await service.export(ALICE, 'gw-0001', {});
      await mine.close();
    });

    it('a later owner exports from visible_since on; an administrator the whole range', async () => {
      const { queries, telemetry, service } = setUp();
      queries.add({ device_id: 'gw-0002', owner_id: ALICE.userId, visible_since: at(-3 * HOUR) });
      telemetry.add('gw-0002', { ts: at(-5 * HOUR), batteryId: 'main', metrics: { temperature: 20 } }, { ts: at(-HOUR), batteryId: 'main', metrics: { soc: 90 } });

      const mine = await service.export(ALICE, 'gw-0002', {});
      const all = await service.export(ADMIN, 'gw-0002', {});

      expect(telemetry.exportQueries.map((query) => query.from)).toEqual([at(-3 * HOUR), at(-DAY)]);
      expect(mine.metrics).toEqual(['soc']);
      expect(all.metrics).toEqual(['soc', 'temperature']);
      await Promise.all([mine.close(), all.close()]);
    });
  });
});

