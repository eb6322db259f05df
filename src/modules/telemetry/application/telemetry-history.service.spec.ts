import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { loadEnv } from '../../../config/env.js';
import { encodeTimeCursor } from '../../../shared/http/cursor.js';
import { InMemoryTelemetryHistoryQueries } from '../../../../test/fakes/telemetry/in-memory-telemetry-history-queries.js';
import { pointsOf } from '../domain/history-series.js';
import { ExportSlots, TooManyExportsError } from './export-slots.js';
import { TelemetryHistoryService, type ExportParams, type History, type HistoryParams, type TelemetryExport } from './telemetry-history.service.js';
import { buckets, raw, refusedFields, withPoints } from '../../../../test/support/history-answers.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const ALICE = 'a1a1a1a1-0000-4000-8000-000000000001';
const CAROL = 'd4d4d4d4-0000-4000-8000-000000000004';

function setUp() {
  const telemetry = new InMemoryTelemetryHistoryQueries();
  const slots = new ExportSlots(loadEnv({ NODE_ENV: 'test', DB_POOL_SIZE: '10', EXPORT_MAX_PER_USER: '2', EXPORT_MAX_CONCURRENT: '3' }));
  return { telemetry, service: new TelemetryHistoryService(telemetry, new FixedClock(NOW), slots) };
}

/** The history of gw-0001 as one who sees all of it asks: the question checked, then answered. */
async function historyOf(service: TelemetryHistoryService, params: HistoryParams, visibleSince: Date | null = null): Promise<History> {
  return service.history('gw-0001', service.historyQuery(params), visibleSince);
}

/** An export as `account` opens it for a device they see all of. */
async function exportOf(service: TelemetryHistoryService, account: string, deviceId: string, params: ExportParams): Promise<TelemetryExport> {
  return service.openExport(account, deviceId, service.exportQuery(params), null);
}

const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);
const iso = (offsetMs: number) => at(offsetMs).toISOString();

describe('TelemetryHistoryService', () => {
  describe('history', () => {
    it('no range: the last 24 hours in 5-minute buckets, every metric and battery; points ascending whatever order the query gives', async () => {
      const { telemetry, service } = setUp();
      telemetry.add(
        'gw-0001',
        { ts: at(-2 * HOUR), batteryId: 'main', metrics: { soc: 80, voltage: 52 } },
        { ts: at(-2 * HOUR + MINUTE), batteryId: 'main', metrics: { soc: 82 } },
        { ts: at(-HOUR), batteryId: 'main', metrics: { soc: 70 } },
        { ts: at(-25 * HOUR), batteryId: 'main', metrics: { soc: 1 } },
      );

      const history = buckets(await historyOf(service, {}));

      expect(telemetry.seriesQueries).toEqual([{ deviceId: 'gw-0001', from: at(-DAY), to: NOW, bucketSec: 300, metrics: null, batteryId: null }]);
      expect(withPoints(history)).toEqual({
        kind: 'buckets',
        deviceId: 'gw-0001',
        from: at(-DAY),
        to: NOW,
        bucketSec: 300,
        // No `to`: the range runs to now, a new question every time, so no tag.
        etag: null,
        series: [
          {
            metric: 'soc',
            batteryId: 'main',
            points: [
              { ts: iso(-2 * HOUR), avg: 81, min: 80, max: 82, count: 2 },
              { ts: iso(-HOUR), avg: 70, min: 70, max: 70, count: 1 },
            ],
          },
          { metric: 'voltage', batteryId: 'main', points: [{ ts: iso(-2 * HOUR), avg: 52, min: 52, max: 52, count: 1 }] },
        ],
      });
    });

    it.each([
      ['7 days, auto: 1 hour', { from: iso(-7 * DAY) }, 3600],
      ['30 days, auto: 6 hours', { from: iso(-30 * DAY) }, 21_600],
      ['a day, explicit 900 s', { bucket: '900' }, 900],
      ['an hour, explicit 7 s', { from: iso(-HOUR), bucket: '7' }, 7],
    ])('bucket: %s', async (_name, params, bucketSec) => {
      const { telemetry, service } = setUp();

      expect(buckets(await historyOf(service, params)).bucketSec).toBe(bucketSec);
      expect(telemetry.seriesQueries.map((query) => query.bucketSec)).toEqual([bucketSec]);
    });

    it('an explicit bucket may give up to 5000 points per series, not one more', async () => {
      const { service } = setUp();

      expect(buckets(await historyOf(service, { from: iso(-5000 * MINUTE), bucket: '60' })).bucketSec).toBe(60);
      expect(await refusedFields(historyOf(service, { from: iso(-5000 * MINUTE - 1000), bucket: '60' }))).toEqual(['bucket']);
    });

    it('metrics and batteryId filter the query', async () => {
      const { telemetry, service } = setUp();

      await historyOf(service, { metrics: ' soc ,voltage,', batteryId: 'pack-2' });

      expect(telemetry.seriesQueries[0]).toMatchObject({ metrics: ['soc', 'voltage'], batteryId: 'pack-2' });
    });

    it('visibleSince: the query starts there, the answer still names the range asked; a range wholly before it reads nothing', async () => {
      const { telemetry, service } = setUp();
      telemetry.add('gw-0001', { ts: at(-5 * HOUR), batteryId: 'main', metrics: { soc: 10 } }, { ts: at(-HOUR), batteryId: 'main', metrics: { soc: 90 } });

      const history = buckets(await historyOf(service, { bucket: '3600' }, at(-3 * HOUR)));
      const before = buckets(await historyOf(service, { from: iso(-6 * HOUR), to: iso(-4 * HOUR) }, at(-3 * HOUR)));

      expect(telemetry.seriesQueries.map((query) => query.from)).toEqual([at(-3 * HOUR)]);
      expect([history.from, history.to, before.from, before.to]).toEqual([at(-DAY), NOW, at(-6 * HOUR), at(-4 * HOUR)]);
      expect(pointsOf(history.series[0]).map((point) => point.avg)).toEqual([90]);
      expect(before.series).toEqual([]);
    });

    describe('bucket=raw: the records themselves, ascending by (ts, batteryId), in pages', () => {
      /** `count` instants `stepMs` apart from an hour ago, a record of two batteries at each. */
      function withRecords(count: number, stepMs = MINUTE) {
        const context = setUp();
        for (let i = 0; i < count; i++) {
          for (const batteryId of ['main', 'pack-2']) context.telemetry.add('gw-0001', { ts: at(-HOUR + i * stepMs), batteryId, metrics: { soc: i } });
        }
        return context;
      }

      it('up to 1000 records by default; the query asks for one more to know whether a page follows', async () => {
        const { telemetry, service } = withRecords(600, 5000);

        const page = raw(await historyOf(service, { bucket: 'raw', from: iso(-DAY) }));

        expect(page.records).toHaveLength(1000);
        expect(telemetry.rawQueries[0]).toEqual({ deviceId: 'gw-0001', from: at(-DAY), to: NOW, batteryId: null, limit: 1001, after: null });
        expect(page.nextCursor).toBe(encodeTimeCursor(page.records[999].ts, page.records[999].battery_id));
      });

      it('following the cursors returns every record once, in order; the last page has no cursor', async () => {
        const { service } = withRecords(5);
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = raw(await historyOf(service, { bucket: 'raw', limit: 3, cursor }));
          seen.push(...page.records.map((record) => `${record.ts.toISOString()} ${record.battery_id}`));
          cursor = page.nextCursor ?? undefined;
          pages += 1;
        } while (cursor !== undefined && pages < 10);

        expect(pages).toBe(4);
        expect(seen).toEqual(Array.from({ length: 5 }, (_, i) => ['main', 'pack-2'].map((batteryId) => `${iso(-HOUR + i * MINUTE)} ${batteryId}`)).flat());
      });

      it('exactly `limit` records: no cursor', async () => {
        const { service } = withRecords(2);

        expect(raw(await historyOf(service, { bucket: 'raw', limit: 4 })).nextCursor).toBeNull();
      });
    });
  });

  describe('export: every record of the range, in batches, holding a slot until closed', () => {
    async function read(exported: TelemetryExport): Promise<string[]> {
      const seen: string[] = [];
      for await (const batch of exported.batches()) seen.push(...batch.map((record) => `${record.ts.toISOString()} ${record.battery_id}`));
      return seen;
    }

    it('the last 24 hours by default, the metrics of the range sorted, records ascending by (ts, batteryId)', async () => {
      const { telemetry, service } = setUp();
      telemetry.add(
        'gw-0001',
        { ts: at(-2 * DAY), batteryId: 'main', metrics: { old: 1 } },
        { ts: at(-HOUR), batteryId: 'pack-2', metrics: { voltage: 13.1 } },
        { ts: at(-HOUR), batteryId: 'main', metrics: { soc: 50, voltage: 13 } },
      );

      const exported = await exportOf(service, ALICE, 'gw-0001', {});

      expect([exported.from, exported.to]).toEqual([at(-DAY), NOW]);
      expect(exported.metrics).toEqual(['soc', 'voltage']);
      expect(await read(exported)).toEqual([`${iso(-HOUR)} main`, `${iso(-HOUR)} pack-2`]);
      await exported.close();
      expect(telemetry.openExports).toBe(0);
    });

    it('bad ranges and battery ids: refused before anything is read', async () => {
      const { telemetry, service } = setUp();

      expect(await refusedFields(exportOf(service, ALICE, 'gw-0001', { from: iso(-HOUR), to: iso(-2 * HOUR) }))).toEqual(['from']);
      expect(await refusedFields(exportOf(service, ALICE, 'gw-0001', { from: iso(-367 * DAY) }))).toEqual(['to']);
      expect(await refusedFields(exportOf(service, ALICE, 'gw-0001', { from: 'yesterday' }))).toEqual(['from']);
      expect(await refusedFields(exportOf(service, ALICE, 'gw-0001', { batteryId: 'a,b' }))).toEqual(['batteryId']);
      expect(telemetry.exportQueries).toEqual([]);
    });

    it('two at once per account and three per instance; closing one (twice changes nothing) frees its slot', async () => {
      const { telemetry, service } = setUp();

      const first = await exportOf(service, ALICE, 'gw-0001', {});
      const second = await exportOf(service, ALICE, 'gw-0001', {});
      await expect(exportOf(service, ALICE, 'gw-0001', {})).rejects.toThrow(TooManyExportsError);
      const third = await exportOf(service, CAROL, 'gw-0002', {});
      const refused = await exportOf(service, CAROL, 'gw-0002', {}).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TooManyExportsError);
      expect((refused as TooManyExportsError).details).toMatchObject({ retryAfterSec: 10, limiter: 'exports-per-instance' });
      expect(telemetry.openExports).toBe(3);

      await first.close();
      await first.close();
      const again = await exportOf(service, ALICE, 'gw-0001', {});
      await expect(exportOf(service, ALICE, 'gw-0001', {})).rejects.toThrow(TooManyExportsError);
      await Promise.all([second.close(), third.close(), again.close()]);
      expect(telemetry.openExports).toBe(0);
    });
  });
});
