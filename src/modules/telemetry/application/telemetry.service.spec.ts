import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { loadEnv } from '../../../config/env.js';
import type { TelemetryRecord } from '../domain/telemetry-record.js';
import { UnmeasuredIngest } from './ingest-metrics.js';
import { InMemoryTelemetryRecordStore } from '../../../../test/fakes/telemetry/in-memory-telemetry-record-store.js';
import { TelemetryService } from './telemetry.service.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const MINUTE = 60_000;
const DAY = 86_400_000;

function setUp(retentionDays = 30) {
  const writer = new InMemoryTelemetryRecordStore();
  const clock = new FixedClock(NOW);
  const service = new TelemetryService(writer, clock, loadEnv({ TELEMETRY_RETENTION_DAYS: String(retentionDays) }), new UnmeasuredIngest());
  return { writer, clock, service };
}

const aRecord = (agoMs: number, overrides: Partial<TelemetryRecord> = {}): TelemetryRecord => ({
  ts: new Date(NOW.getTime() - agoMs),
  batteryId: 'main',
  metrics: { voltage: 52.1 },
  ...overrides,
});

describe('TelemetryService.ingest: what a batch answers', () => {
  it('a new batch: every record accepted, written under the device at the clock’s time', async () => {
    const { service, writer } = setUp();
    const records = [aRecord(3 * MINUTE), aRecord(2 * MINUTE, { batteryId: 'pack-2' }), aRecord(MINUTE)];

    expect(await service.ingest('gw-0001', records)).toEqual({ accepted: 3, duplicates: 0, rejected: [] });

    expect(writer.writes).toEqual([{ deviceId: 'gw-0001', records: records.map((record, index) => ({ ...record, index })), now: NOW }]);
    expect(writer.lastSeen.get('gw-0001')).toEqual(NOW);
  });

  it('the same batch again (a retry after a lost answer): all duplicates, nothing stored twice', async () => {
    const { service, writer } = setUp();
    const records = [aRecord(3 * MINUTE), aRecord(2 * MINUTE)];
    await service.ingest('gw-0001', records);

    expect(await service.ingest('gw-0001', records)).toEqual({ accepted: 0, duplicates: 2, rejected: [] });
    expect(writer.stored.size).toBe(2);
  });

  it('a batch overlapping an earlier one: only the new records count as accepted', async () => {
    const { service } = setUp();
    await service.ingest('gw-0001', [aRecord(3 * MINUTE), aRecord(2 * MINUTE)]);

    expect(await service.ingest('gw-0001', [aRecord(2 * MINUTE), aRecord(MINUTE), aRecord(30_000)])).toEqual({ accepted: 2, duplicates: 1, rejected: [] });
  });

  it('the same ts and battery twice in one batch with other metrics: the first is stored, the second rejected as a conflict', async () => {
    const { service, writer } = setUp();

    expect(await service.ingest('gw-0001', [aRecord(MINUTE, { metrics: { voltage: 1 } }), aRecord(MINUTE, { metrics: { voltage: 2 } })])).toEqual({
      accepted: 1,
      duplicates: 0,
      rejected: [{ index: 1, code: 'CONFLICTS_WITH_STORED' }],
    });
    expect([...writer.stored.values()].map((record) => record.metrics)).toEqual([{ voltage: 1 }]);
  });

  it('conflicts take their place among the other rejections, by index', async () => {
    const { service } = setUp();
    await service.ingest('gw-0001', [aRecord(2 * MINUTE, { metrics: { voltage: 1 } })]);

    expect(await service.ingest('gw-0001', [aRecord(-10 * MINUTE), aRecord(2 * MINUTE, { metrics: { voltage: 9 } }), aRecord(MINUTE), aRecord(400 * DAY)])).toEqual({
      accepted: 1,
      duplicates: 0,
      rejected: [
        { index: 0, code: 'TS_IN_FUTURE' },
        { index: 1, code: 'CONFLICTS_WITH_STORED' },
        { index: 3, code: 'TS_BEYOND_RETENTION' },
      ],
    });
  });

  it('the same ts from two devices are two records', async () => {
    const { service } = setUp();
    await service.ingest('gw-0001', [aRecord(MINUTE)]);

    expect(await service.ingest('gw-0002', [aRecord(MINUTE)])).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
  });

  it('records refused by admit are answered by their index in the request and never written; the rest are', async () => {
    const { service, writer } = setUp();
    const records = [
      aRecord(MINUTE),
      aRecord(-6 * MINUTE),
      aRecord(31 * DAY),
      aRecord(2 * MINUTE, { metrics: { voltage: Number.POSITIVE_INFINITY } }),
      aRecord(3 * MINUTE, { metrics: { voltage: 2e12 } }),
      aRecord(4 * MINUTE),
    ];

    expect(await service.ingest('gw-0001', records)).toEqual({
      accepted: 2,
      duplicates: 0,
      rejected: [
        { index: 1, code: 'TS_IN_FUTURE' },
        { index: 2, code: 'TS_BEYOND_RETENTION' },
        { index: 3, code: 'VALUE_OUT_OF_RANGE' },
        { index: 4, code: 'VALUE_OUT_OF_RANGE' },
      ],
    });
    expect(writer.writes).toHaveLength(1);
    expect(writer.writes[0].records.map((record) => record.ts)).toEqual([records[0].ts, records[5].ts]);
  });

  it('a batch with nothing admitted: no write at all (last seen stays), everything rejected', async () => {
    const { service, writer } = setUp();

    expect(await service.ingest('gw-0001', [aRecord(-10 * MINUTE), aRecord(40 * DAY)])).toEqual({
      accepted: 0,
      duplicates: 0,
      rejected: [
        { index: 0, code: 'TS_IN_FUTURE' },
        { index: 1, code: 'TS_BEYOND_RETENTION' },
      ],
    });
    expect(writer.writes).toEqual([]);
    expect(writer.lastSeen.has('gw-0001')).toBe(false);
  });

  it('the retention window is the configured one, counted back from the clock', async () => {
    const { service, clock } = setUp(7);
    clock.advanceSec(DAY / 1000);
    const later = (agoMs: number) => ({ ts: new Date(clock.now().getTime() - agoMs), batteryId: 'main', metrics: { soc: 50 } });

    expect(await service.ingest('gw-0001', [later(7 * DAY), later(7 * DAY + 1), later(0)])).toEqual({
      accepted: 2,
      duplicates: 0,
      rejected: [{ index: 1, code: 'TS_BEYOND_RETENTION' }],
    });
  });
});
