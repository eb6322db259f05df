import { TelemetryCompaction } from '../../src/modules/telemetry/application/telemetry-compaction.js';
import { expectBuckets, referenceEnergy } from '../support/battery-reference.js';
import { aRegistration, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth } from '../support/customers.js';
import { jobsSettled } from '../support/jobs.js';
import {
  DAY,
  HOUR,
  MINUTE,
  expectSeries,
  expectedRollup,
  expectedSeries,
  history,
  ingest,
  ingestAll,
  iso,
  rollupRows,
  type HistoryQuery,
  type TelemetryRecordBody,
  type TelemetryRow,
} from '../support/telemetry.js';

/**
 * Settled days in the compact layout (one row per device, battery and UTC day): every answer is
 * the one the rows gave, records that arrive after their day was compacted still land (in order,
 * out of order, repeated), and compaction runs as a job of the queue.
 */

const BATTERIES = ['main', 'pack-2'];
const STEP_MS = 60_000;

/**
 * Values of every kind a gateway sends: decimals of different places, integers, negatives, doubles
 * that need all 17 digits, an exponent or too many digits for a scaled integer (stored as they
 * are), a metric
 * missing from some records; timestamps with milliseconds.
 */
function recordAt(start: number, i: number, batteryId: string): TelemetryRecordBody {
  const metrics: Record<string, number> = {
    voltage: Math.round((51 + Math.sin(i / 90) * 1.3 + (i % 7) * 0.011) * 1000) / 1000,
    current: Math.round((-12 + ((i * 13) % 29) * 0.85) * 100) / 100,
    cycles: 100 + Math.floor(i / 500),
  };
  if (batteryId === 'main' || i % 4 === 0) metrics.soc = Math.round((60 + Math.sin(i / 400) * 35) * 10) / 10;
  if (i % 5 === 0) metrics.ratio = (i % 3) * 0.1 + 0.2; // 0.30000000000000004 and friends
  if (i % 11 === 0) metrics.tiny = i * 1e-9 + 1e-7;
  if (i % 13 === 0) metrics.precise = 1.234567890123456 + (i % 10) / 1e15; // past 2^50 once scaled
  return { ts: iso(start + i * STEP_MS + (i % 997)), batteryId, metrics };
}

describe('compact settled days', () => {
  let t: TestApp;
  let headers: { authorization: string };
  let deviceId: string;
  let deviceToken: string;
  const now = Date.now();
  /** Four whole UTC days that ended three days ago or more: settled under the default 48 hours. */
  const start = Math.floor(now / DAY) * DAY - 7 * DAY;
  const end = start + 4 * DAY;
  const records: TelemetryRecordBody[] = [];
  for (let i = 0; i < (end - start) / STEP_MS; i++) for (const batteryId of BATTERIES) records.push(recordAt(start, i, batteryId));
  /** Records from the last two hours too: never settled, stay rows. */
  const recent = Array.from({ length: 120 }, (_, i) => recordAt(now - 2 * HOUR, i, 'main'));

  const read = (query: HistoryQuery) => history(t.api, headers, deviceId, query);
  const compaction = () => t.app.get(TelemetryCompaction);

  /** The answers the tests compare before and after compaction. */
  const QUERIES: HistoryQuery[] = [
    { from: iso(start), to: iso(end), bucket: 'auto' },
    { from: iso(start + 17 * MINUTE + 123), to: iso(end - 3 * HOUR - 41_000), bucket: '300' },
    { from: iso(start + DAY - 7 * MINUTE), to: iso(start + DAY + 13 * MINUTE + 5), bucket: '60' },
    { from: iso(start + 5 * HOUR + 1), to: iso(start + 2 * DAY + 7 * HOUR - 1), bucket: '3600' },
    { from: iso(start + 2 * DAY + 3 * HOUR + 17_000), to: iso(start + 2 * DAY + 3 * HOUR + 29 * MINUTE), bucket: '7' },
    { from: iso(start), to: iso(now), bucket: '86400' },
    { from: iso(start + HOUR), to: iso(now), bucket: '21600', metrics: 'soc,precise', batteryId: 'pack-2' },
  ];

  async function answers() {
    return Promise.all(
      QUERIES.map(async (query) => {
        const { data, response } = await read(query);
        expect(response.status).toBe(200);
        return data;
      }),
    );
  }

  /** Every record through the raw pages, 700 at a time. */
  async function rawRecords(from: number, to: number) {
    const all: unknown[] = [];
    let cursor: string | undefined;
    do {
      const { data, response } = await read({ from: iso(from), to: iso(to), bucket: 'raw', limit: 700, ...(cursor ? { cursor } : {}) });
      expect(response.status).toBe(200);
      all.push(...(data!.records ?? []));
      cursor = data!.nextCursor ?? undefined;
    } while (cursor);
    return all;
  }

  async function exportCsv(from: number, to: number): Promise<string> {
    const { data, response } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/export', {
      params: { path: { deviceId }, query: { from: iso(from), to: iso(to) } },
      headers,
      parseAs: 'text',
    });
    expect(response.status).toBe(200);
    return data as unknown as string;
  }

  const energy = (batteryId: string, from: number, to: number) =>
    t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/energy', {
      params: { path: { deviceId, batteryId }, query: { from: iso(from), to: iso(to), bucket: '1h' } },
      headers,
    });
  const health = (batteryId: string) =>
    t.api.GET('/api/v1/dashboard/devices/{deviceId}/batteries/{batteryId}/health', { params: { path: { deviceId, batteryId }, query: { from: iso(start), to: iso(end) } }, headers });

  /** The battery's hourly energy as answered, next to the reference computed here from `sent`. */
  async function expectEnergy(batteryId: string, sent: TelemetryRecordBody[]) {
    const { data, response } = await energy(batteryId, start, end);
    expect(response.status).toBe(200);
    const rows: TelemetryRow[] = sent
      .filter((record) => (record.batteryId ?? 'main') === batteryId)
      .map((record) => ({ device_id: deviceId, battery_id: batteryId, ts: new Date(record.ts), metrics: record.metrics, received_at: new Date(record.ts) }));
    expectBuckets(
      data!.points.map((point) => ({ start: Date.parse(point.ts), chargedAh: point.chargedAh, dischargedAh: point.dischargedAh, chargedWh: point.chargedWh, dischargedWh: point.dischargedWh, coveredMs: point.coverage * HOUR })),
      referenceEnergy(rows, start, end, HOUR),
    );
    return data;
  }

  async function layout() {
    const { rows } = await t.db.query<{ rows: number; days: number; hours: number; slots: number }>(
      `SELECT (SELECT count(*)::int FROM telemetry WHERE device_id = $1 AND ts < $2) AS rows,
              (SELECT count(*)::int FROM telemetry_days WHERE device_id = $1) AS days,
              (SELECT count(*)::int FROM telemetry_hours WHERE device_id = $1) AS hours,
              (SELECT count(*)::int FROM telemetry_rollup_5m WHERE device_id = $1 AND bucket < $2) AS slots`,
      [deviceId, new Date(end)],
    );
    return rows[0];
  }

  async function compactThroughTheQueue() {
    await compaction().schedule();
    await jobsSettled(t.db, 60_000);
  }

  let before: Awaited<ReturnType<typeof answers>>;
  let rawBefore: unknown[];
  let csvBefore: string;
  let energyBefore: unknown[];
  let healthBefore: unknown[];

  beforeAll(async () => {
    t = await createTestApp();
    const owner = await aVerifiedCustomer(t);
    headers = customerAuth(owner.accessToken);
    const body = aRegistration();
    deviceToken = (await registerDevice(t.api, body)).accessToken;
    deviceId = body.deviceId;
    const claimed = await t.api.POST('/api/v1/user/devices/claim', { body: { deviceId, claimCode: body.claimCode }, headers });
    expect(claimed.response.status).toBe(200);
    await ingestAll(t.api, deviceToken, [...records, ...recent]);
    before = await answers();
    rawBefore = await rawRecords(start, end);
    csvBefore = await exportCsv(start, now);
    energyBefore = await Promise.all(BATTERIES.map((batteryId) => expectEnergy(batteryId, records)));
    healthBefore = await Promise.all(BATTERIES.map(async (batteryId) => (await health(batteryId)).data));
    await compactThroughTheQueue();
  }, 180_000);
  afterAll(async () => {
    await t.close();
  });

  it('the job moved every settled day into compact rows (records per battery and hour, slots per battery and day) and left the recent records rows', async () => {
    expect(await layout()).toEqual({ rows: 0, days: 4 * BATTERIES.length, hours: 4 * 24 * BATTERIES.length, slots: 0 });
    const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = $1', [deviceId]);
    expect(rows[0].n).toBe(recent.length);
  });

  it('every history answer is the one the rows gave, asked once and again (the second from the kept slots and edge records)', async () => {
    expect(await answers()).toEqual(before);
    expect(await answers()).toEqual(before);
    expectSeries(before[0]!.series, expectedSeries(records, { from: start, to: end, bucketSec: before[0]!.bucketSec! }));
  });

  it('raw pages give back every record exactly as sent', async () => {
    const raw = await rawRecords(start, end);

    expect(raw).toEqual(rawBefore);
    const sent = records.map((record) => ({ ts: record.ts, batteryId: record.batteryId ?? 'main', metrics: record.metrics }));
    expect(raw).toEqual(sent.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.batteryId < b.batteryId ? -1 : 1)));
  });

  it('the CSV export is byte for byte the one the rows gave', async () => {
    expect(await exportCsv(start, now)).toBe(csvBefore);
  });

  it('battery energy and health read the compacted days as they read the rows', async () => {
    expect(await Promise.all(BATTERIES.map((batteryId) => expectEnergy(batteryId, records)))).toEqual(energyBefore);
    expect(await Promise.all(BATTERIES.map(async (batteryId) => (await health(batteryId)).data))).toEqual(healthBefore);
  });

  it('a compacted day is compacted once: a second run changes nothing', async () => {
    const compactRows = async () => ({
      days: (await t.db.query('SELECT * FROM telemetry_days WHERE device_id = $1 ORDER BY day, battery_id', [deviceId])).rows,
      hours: (await t.db.query('SELECT * FROM telemetry_hours WHERE device_id = $1 ORDER BY hour, battery_id', [deviceId])).rows,
    });
    const first = await compactRows();
    const result = await compaction().compactSettled();
    const second = await compactRows();

    expect(result).toEqual({ days: 0, records: 0, done: true });
    expect(first.hours).toHaveLength(4 * 24 * BATTERIES.length);
    expect(second).toEqual(first);
  });

  describe('records that arrive after their day was compacted', () => {
    const day2 = start + 2 * DAY;
    /** In order: after the last record of the third day; out of order: inside the first and second, between stored ones. */
    const late: TelemetryRecordBody[] = [
      { ts: iso(day2 + DAY - 250), batteryId: 'main', metrics: { voltage: 50.125, soc: 12.5 } },
      { ts: iso(start + 3 * HOUR + 30_001), batteryId: 'pack-2', metrics: { voltage: 49.5, current: -3.25, newcomer: 7 } },
      { ts: iso(start + DAY + 10 * HOUR + 5), batteryId: 'main', metrics: { current: 99.75 } },
    ];
    const all = () => [...records, ...late];

    beforeAll(async () => {
      const { data, response } = await ingest(t.api, deviceToken, late);
      expect(response.status).toBe(200);
      expect(data).toEqual(expect.objectContaining({ accepted: late.length, duplicates: 0, rejected: [] }));
    });

    it('a retried batch of compacted records counts as duplicates and changes nothing', async () => {
      const retried = [records[10], records[2000], records[5001], late[0]];
      const { data, response } = await ingest(t.api, deviceToken, retried);

      expect(response.status).toBe(200);
      expect(data).toEqual(expect.objectContaining({ accepted: 0, duplicates: retried.length, rejected: [] }));
      expect(await rawRecords(start, end)).toHaveLength(all().length);
    });

    it('a compacted record sent again with other values is refused as a conflict, the stored one stays', async () => {
      const changed = { ...records[3000], metrics: { ...records[3000].metrics, voltage: 1 } };
      const { data, response } = await ingest(t.api, deviceToken, [changed]);

      expect(response.status).toBe(200);
      expect(data).toEqual(expect.objectContaining({ accepted: 0, duplicates: 0, rejected: [expect.objectContaining({ index: 0, code: 'CONFLICTS_WITH_STORED' })] }));
    });

    it('history, raw pages and every rollup level include them, merged with the compacted days', async () => {
      const { data } = await read({ from: iso(start), to: iso(end), bucket: '300' });
      expectSeries(data!.series, expectedSeries(all(), { from: start, to: end, bucketSec: 300 }));
      const edges = await read({ from: iso(start + 3 * HOUR + 29_000), to: iso(start + 3 * HOUR + 31_000), bucket: '1' });
      expectSeries(edges.data!.series, expectedSeries(all(), { from: start + 3 * HOUR + 29_000, to: start + 3 * HOUR + 31_000, bucketSec: 1 }));
      expect(await rawRecords(start, end)).toHaveLength(all().length);
      for (const batteryId of BATTERIES) await expectEnergy(batteryId, all());
      const levels = await rollupRows(t.db, deviceId);
      const expected = expectedRollup([...all(), ...recent]);
      for (const level of ['1h', '6h', '1d'] as const) expect(levels[level]).toEqual(expected[level]);
    });

    it('the next compaction merges them into their days: the same answers, no rows left', async () => {
      const answered = await read({ from: iso(start), to: iso(end), bucket: '300' });
      const raw = await rawRecords(start, end);
      // The hour's job ran already (one a slot): this run is the next hour's.
      expect(await compaction().compactSettled()).toEqual({ days: 3, records: expect.any(Number), done: true });

      expect(await layout()).toEqual({ rows: 0, days: 4 * BATTERIES.length, hours: 4 * 24 * BATTERIES.length, slots: 0 });
      expect((await read({ from: iso(start), to: iso(end), bucket: '300' })).data).toEqual(answered.data);
      expect(await rawRecords(start, end)).toEqual(raw);
      for (const batteryId of BATTERIES) await expectEnergy(batteryId, all());
    });
  });
});
