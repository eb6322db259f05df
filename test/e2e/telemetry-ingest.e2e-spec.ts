import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer } from '../support/customers.js';
import { deviceRow } from '../support/database-state.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import {
  DAY,
  HOUR,
  MINUTE,
  expectedRollup,
  ingest,
  ingestRaw,
  iso,
  latestRows,
  rollupRows,
  telemetryCounts,
  telemetryRows,
  type TelemetryRecordBody,
  type TelemetryRow,
} from '../support/telemetry.js';

const RETENTION_DAYS = 30;
const KIB = 1024;
const MIB = 1024 * KIB;

/** The stored columns a test compares (received_at is the server's own). */
function stored(rows: TelemetryRow[]) {
  return rows.map((row) => ({ deviceId: row.device_id, batteryId: row.battery_id, ts: row.ts.toISOString(), metrics: row.metrics }));
}

/** A batch of `count` records one second apart with 64 metrics each; the names' length sets the size. */
function aWideBatch(count: number, nameLength: number, firstTs: number): TelemetryRecordBody[] {
  return Array.from({ length: count }, (_, i) => ({
    ts: iso(firstTs + i * 1000),
    batteryId: 'pack-1',
    metrics: Object.fromEntries(
      Array.from({ length: 64 }, (_, j) => [`cellTemp_${j}_`.padEnd(nameLength, 'x'), Math.round(200 + ((i * 31 + j * 7) % 150)) / 10]),
    ),
  }));
}

describe('POST /api/v1/telemetry', () => {
  let t: TestApp;
  /** Every timestamp of this file is relative to this instant, captured once; ingested ones lie before it. */
  const now = Date.now();

  beforeAll(async () => {
    t = await createTestApp({ TELEMETRY_RETENTION_DAYS: String(RETENTION_DAYS) });
  });
  afterAll(async () => {
    await t.close();
  });

  describe('a valid batch', () => {
    it('answers 200 { accepted, duplicates: 0, rejected: [] } and stores each record under the device, batteryId defaulting to main', async () => {
      const device = await registerDevice(t.api);
      const records: TelemetryRecordBody[] = [
        { ts: iso(now - 3 * MINUTE), metrics: { voltage: 52.1, current: -3.4, soc: 81.5 } },
        { ts: iso(now - 2 * MINUTE), batteryId: 'pack-2', metrics: { voltage: 51.9, temperature: 24.2 } },
        { ts: iso(now - 1 * MINUTE), metrics: { voltage: 52, current: 0, soc: 81.25 } },
      ];

      const { data, response } = await ingest(t.api, device.accessToken, records);

      expect(response.status).toBe(200);
      expect(data).toEqual({ accepted: 3, duplicates: 0, rejected: [] });
      expect(stored(await telemetryRows(t.db, device.deviceId))).toEqual([
        { deviceId: device.deviceId, batteryId: 'main', ts: records[0].ts, metrics: records[0].metrics },
        { deviceId: device.deviceId, batteryId: 'pack-2', ts: records[1].ts, metrics: records[1].metrics },
        { deviceId: device.deviceId, batteryId: 'main', ts: records[2].ts, metrics: records[2].metrics },
      ]);
    });

    it('the same ts on two batteries are two records; a ts with an offset is stored as the same instant in UTC', async () => {
      const device = await registerDevice(t.api);
      const at = new Date(now - 10 * MINUTE);
      const withOffset = `${iso(at.getTime() + 2 * 3_600_000).slice(0, 23)}+02:00`;

      const { data } = await ingest(t.api, device.accessToken, [
        { ts: withOffset, batteryId: 'pack-1', metrics: { voltage: 1 } },
        { ts: at.toISOString(), batteryId: 'pack-2', metrics: { voltage: 2 } },
      ]);

      expect(data).toEqual({ accepted: 2, duplicates: 0, rejected: [] });
      expect(stored(await telemetryRows(t.db, device.deviceId))).toEqual([
        { deviceId: device.deviceId, batteryId: 'pack-1', ts: at.toISOString(), metrics: { voltage: 1 } },
        { deviceId: device.deviceId, batteryId: 'pack-2', ts: at.toISOString(), metrics: { voltage: 2 } },
      ]);
    });

    it('sets devices.last_seen_at to the time of the request', async () => {
      const device = await registerDevice(t.api);
      expect((await deviceRow(t.db, device.deviceId))!.last_seen_at).toBeNull();
      const before = Date.now();

      await ingest(t.api, device.accessToken, [{ ts: iso(now - 30 * MINUTE), metrics: { voltage: 50 } }]);

      const lastSeen = (await deviceRow(t.db, device.deviceId))!.last_seen_at!.getTime();
      expect(lastSeen).toBeGreaterThanOrEqual(before);
      expect(lastSeen).toBeLessThanOrEqual(Date.now());
    });

    it('500 records in one batch are stored, with custom metric names up to 40 characters', async () => {
      const device = await registerDevice(t.api);
      const longest = `m${'x'.repeat(39)}`;
      const records: TelemetryRecordBody[] = Array.from({ length: 500 }, (_, i) => ({
        ts: iso(now - 2 * 3_600_000 + i * 10_000),
        batteryId: i % 2 === 0 ? 'pack-1' : 'pack-2',
        metrics: { voltage: 48 + (i % 10) / 4, cellTemp_3: 20 + (i % 7), cellVoltage_12: 3.2 + (i % 5) / 100, a: i, [longest]: -i - 1, cycleCount: 7 },
      }));

      const { data, response } = await ingest(t.api, device.accessToken, records);

      expect(response.status).toBe(200);
      expect(data).toEqual({ accepted: 500, duplicates: 0, rejected: [] });
      const rows = await telemetryRows(t.db, device.deviceId);
      expect(stored(rows)).toEqual(records.map((record) => ({ deviceId: device.deviceId, batteryId: record.batteryId, ts: record.ts, metrics: record.metrics })));
      const latest = await latestRows(t.db, device.deviceId);
      expect(latest.map((row) => `${row.battery_id}/${row.metric}`).sort()).toEqual(
        ['pack-1', 'pack-2'].flatMap((battery) => ['a', 'cellTemp_3', 'cellVoltage_12', 'cycleCount', longest, 'voltage'].map((metric) => `${battery}/${metric}`)).sort(),
      );
    });
  });

  describe('idempotency: a retried batch stores nothing twice', () => {
    let device: Registered;
    let records: TelemetryRecordBody[];

    beforeAll(async () => {
      device = await registerDevice(t.api);
      // Three 5-minute slots, two batteries, values that make sum, min and max all differ.
      records = Array.from({ length: 12 }, (_, i) => ({
        ts: iso(Math.floor((now - HOUR) / 300_000) * 300_000 + i * 75_000),
        batteryId: i % 3 === 0 ? 'pack-2' : 'main',
        metrics: { voltage: 50 + i * 0.25, current: i % 2 === 0 ? -1.5 * (i + 1) : 2 },
      }));
      const { data } = await ingest(t.api, device.accessToken, records);
      expect(data).toEqual({ accepted: 12, duplicates: 0, rejected: [] });
    });

    it('every rollup level (5 min, 1 h, 1 day) holds count/sum/min/max per (slot, battery, metric) of what was stored', async () => {
      expect(await rollupRows(t.db, device.deviceId)).toEqual(expectedRollup(records));
    });

    it('the same batch again: 200 { accepted: 0, duplicates: 12 }; records, rollup and latest values unchanged', async () => {
      const before = { rows: await telemetryRows(t.db, device.deviceId), rollup: await rollupRows(t.db, device.deviceId), latest: await latestRows(t.db, device.deviceId) };

      const { data, response } = await ingest(t.api, device.accessToken, records);

      expect(response.status).toBe(200);
      expect(data).toEqual({ accepted: 0, duplicates: 12, rejected: [] });
      expect(await telemetryRows(t.db, device.deviceId)).toEqual(before.rows);
      expect(await rollupRows(t.db, device.deviceId)).toEqual(before.rollup);
      expect(await rollupRows(t.db, device.deviceId)).toEqual(expectedRollup(records));
      expect(await latestRows(t.db, device.deviceId)).toEqual(before.latest);
    });

    it('the same (battery, ts) with other values: rejected CONFLICTS_WITH_STORED, never dropped silently; the first stored value wins everywhere', async () => {
      const first = records[4];
      const before = { rollup: await rollupRows(t.db, device.deviceId), latest: await latestRows(t.db, device.deviceId) };

      const { data } = await ingest(t.api, device.accessToken, [records[3], { ...first, metrics: { voltage: 999, current: 999 } }]);

      expect(data).toEqual({ accepted: 0, duplicates: 1, rejected: [{ index: 1, code: 'CONFLICTS_WITH_STORED' }] });
      const row = (await telemetryRows(t.db, device.deviceId)).find((candidate) => candidate.ts.toISOString() === first.ts && candidate.battery_id === first.batteryId);
      expect(row?.metrics).toEqual(first.metrics);
      expect(await rollupRows(t.db, device.deviceId)).toEqual(before.rollup);
      expect(await latestRows(t.db, device.deviceId)).toEqual(before.latest);
    });

    it('a retry is a duplicate, whatever the order of its metrics; two records of one (battery, ts) in one batch: the second conflicts', async () => {
      const first = records[5];
      const reordered = Object.fromEntries(Object.entries(first.metrics).reverse());
      expect(Object.keys(reordered)).not.toEqual(Object.keys(first.metrics));
      expect((await ingest(t.api, device.accessToken, [{ ...first, metrics: reordered }])).data).toEqual({ accepted: 0, duplicates: 1, rejected: [] });

      const at = iso(Date.parse(records[0].ts) + 2000);
      const { data } = await ingest(t.api, device.accessToken, [
        { ts: at, batteryId: 'main', metrics: { voltage: 41 } },
        { ts: at, batteryId: 'main', metrics: { voltage: 42 } },
        { ts: at, batteryId: 'main', metrics: { voltage: 41 } },
      ]);
      expect(data).toEqual({ accepted: 1, duplicates: 1, rejected: [{ index: 1, code: 'CONFLICTS_WITH_STORED' }] });
      const stored = (await telemetryRows(t.db, device.deviceId)).filter((candidate) => candidate.ts.toISOString() === at);
      expect(stored.map((candidate) => candidate.metrics)).toEqual([{ voltage: 41 }]);
    });

    it('a batch of one stored and one new record: accepted 1, duplicates 1, only the new one feeds the rollup', async () => {
      const fresh: TelemetryRecordBody = { ts: iso(Date.parse(records[0].ts) + 1000), batteryId: 'main', metrics: { voltage: 40, current: 0.5 } };
      const stored = await telemetryRows(t.db, device.deviceId);

      const { data } = await ingest(t.api, device.accessToken, [records[1], fresh]);

      expect(data).toEqual({ accepted: 1, duplicates: 1, rejected: [] });
      expect(await telemetryRows(t.db, device.deviceId)).toHaveLength(stored.length + 1);
      const others = stored.filter((row) => !records.some((record) => record.ts === row.ts.toISOString() && record.batteryId === row.battery_id));
      expect(await rollupRows(t.db, device.deviceId)).toEqual(expectedRollup([...records, ...others.map((row) => ({ ts: row.ts.toISOString(), batteryId: row.battery_id, metrics: row.metrics }) as TelemetryRecordBody), fresh]));
    });
  });

  describe('device_latest_metrics', () => {
    it('holds the newest value per (battery, metric); an older record never moves it back, a newer one moves it forward', async () => {
      const device = await registerDevice(t.api);
      const t1 = now - 20 * MINUTE;
      await ingest(t.api, device.accessToken, [
        { ts: iso(t1), metrics: { voltage: 50, soc: 80 } },
        { ts: iso(t1 + MINUTE), metrics: { voltage: 51 } },
        { ts: iso(t1), batteryId: 'pack-2', metrics: { voltage: 40 } },
      ]);
      const latest = async () => (await latestRows(t.db, device.deviceId)).map((row) => ({ battery: row.battery_id, metric: row.metric, ts: row.ts.toISOString(), value: row.value }));

      expect(await latest()).toEqual([
        { battery: 'main', metric: 'soc', ts: iso(t1), value: 80 },
        { battery: 'main', metric: 'voltage', ts: iso(t1 + MINUTE), value: 51 },
        { battery: 'pack-2', metric: 'voltage', ts: iso(t1), value: 40 },
      ]);

      // Older than what is stored: voltage and soc stay, a metric not seen before is added.
      const older = await ingest(t.api, device.accessToken, [{ ts: iso(t1 - 5 * MINUTE), metrics: { voltage: 10, soc: 10, rssi: -70 } }]);
      expect(older.data).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
      expect(await latest()).toEqual([
        { battery: 'main', metric: 'rssi', ts: iso(t1 - 5 * MINUTE), value: -70 },
        { battery: 'main', metric: 'soc', ts: iso(t1), value: 80 },
        { battery: 'main', metric: 'voltage', ts: iso(t1 + MINUTE), value: 51 },
        { battery: 'pack-2', metric: 'voltage', ts: iso(t1), value: 40 },
      ]);

      await ingest(t.api, device.accessToken, [{ ts: iso(t1 + 2 * MINUTE), metrics: { voltage: 52.5 } }]);
      expect(await latest()).toEqual([
        { battery: 'main', metric: 'rssi', ts: iso(t1 - 5 * MINUTE), value: -70 },
        { battery: 'main', metric: 'soc', ts: iso(t1), value: 80 },
        { battery: 'main', metric: 'voltage', ts: iso(t1 + 2 * MINUTE), value: 52.5 },
        { battery: 'pack-2', metric: 'voltage', ts: iso(t1), value: 40 },
      ]);
    });
  });

  describe('records refused on their own', () => {
    it(`ts more than 5 minutes ahead: TS_IN_FUTURE; older than TELEMETRY_RETENTION_DAYS (${RETENTION_DAYS}): TS_BEYOND_RETENTION; the others are stored`, async () => {
      const device = await registerDevice(t.api);
      const records: TelemetryRecordBody[] = [
        { ts: iso(now - MINUTE), metrics: { voltage: 1 } },
        { ts: iso(now + 6 * MINUTE), metrics: { voltage: 2 } },
        { ts: iso(now - (RETENTION_DAYS - 1) * DAY), metrics: { voltage: 3 } },
        { ts: iso(now - (RETENTION_DAYS + 1) * DAY), metrics: { voltage: 4 } },
        { ts: iso(now - 2 * MINUTE), metrics: { voltage: 5 } },
      ];

      const { data, response } = await ingest(t.api, device.accessToken, records);

      expect(response.status).toBe(200);
      expect(data).toEqual({
        accepted: 3,
        duplicates: 0,
        rejected: [
          { index: 1, code: 'TS_IN_FUTURE' },
          { index: 3, code: 'TS_BEYOND_RETENTION' },
        ],
      });
      expect(stored(await telemetryRows(t.db, device.deviceId)).map((row) => row.metrics.voltage)).toEqual([3, 5, 1]);
    });

    it('a batch in which every record is refused: 200, accepted 0, nothing stored', async () => {
      const device = await registerDevice(t.api);
      const counts = await telemetryCounts(t.db);

      const { data } = await ingest(t.api, device.accessToken, [
        { ts: iso(now + DAY), metrics: { voltage: 1 } },
        { ts: iso(now - 400 * DAY), metrics: { voltage: 1 } },
      ]);

      expect(data).toEqual({
        accepted: 0,
        duplicates: 0,
        rejected: [
          { index: 0, code: 'TS_IN_FUTURE' },
          { index: 1, code: 'TS_BEYOND_RETENTION' },
        ],
      });
      expect(await telemetryCounts(t.db)).toEqual(counts);
    });
  });

  describe('a structurally invalid batch: 400 VALIDATION_FAILED naming the field, and nothing stored', () => {
    let device: Registered;
    const valid = (): TelemetryRecordBody => ({ ts: iso(now - 5 * MINUTE), metrics: { voltage: 52.1 } });
    const withSecond = (second: Record<string, unknown>) => JSON.stringify({ records: [valid(), { ...valid(), ts: iso(now - 4 * MINUTE), ...second }] });
    const metrics = (value: Record<string, unknown>) => withSecond({ metrics: value });

    beforeAll(async () => {
      device = await registerDevice(t.api);
    });

    type Case = [string, () => string, string];
    const cases: Case[] = [
      ['no records', () => JSON.stringify({ records: [] }), 'records'],
      ['records missing', () => JSON.stringify({}), 'records'],
      ['records not an array', () => JSON.stringify({ records: valid() }), 'records'],
      ['501 records', () => JSON.stringify({ records: Array.from({ length: 501 }, (_, i) => ({ ts: iso(now - HOUR + i * 1000), metrics: { voltage: i } })) }), 'records'],
      ['metrics empty', () => metrics({}), 'records.1.metrics'],
      ['metrics missing', () => JSON.stringify({ records: [valid(), { ts: iso(now - 4 * MINUTE) }] }), 'records.1.metrics'],
      ['metrics an array', () => metrics([1, 2] as never), 'records.1.metrics'],
      ['65 metrics', () => metrics(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`m${i}`, i]))), 'records.1.metrics'],
      ['a metric named Voltage', () => metrics({ Voltage: 1 }), 'records.1.metrics'],
      ['a metric named 1abc', () => metrics({ '1abc': 1 }), 'records.1.metrics'],
      ['a metric named a-b', () => metrics({ 'a-b': 1 }), 'records.1.metrics'],
      ['a metric name of 41 characters', () => metrics({ [`m${'x'.repeat(40)}`]: 1 }), 'records.1.metrics'],
      ['a metric value that is a string', () => metrics({ voltage: 'high' }), 'records.1.metrics'],
      ['a metric value that is a number in a string ("1.5")', () => metrics({ voltage: '1.5' }), 'records.1.metrics'],
      ['a metric value null', () => metrics({ voltage: null }), 'records.1.metrics'],
      ['a metric value that is an object', () => metrics({ voltage: { v: 1 } }), 'records.1.metrics'],
      ['ts without a zone', () => withSecond({ ts: iso(now - 4 * MINUTE).slice(0, 19) }), 'records.1.ts'],
      ['ts garbage', () => withSecond({ ts: 'yesterday' }), 'records.1.ts'],
      ['ts shaped right but no real instant (month 13, hour 25)', () => withSecond({ ts: '2026-13-40T25:61:61Z' }), 'records.1.ts'],
      ['ts as epoch milliseconds', () => withSecond({ ts: now - 4 * MINUTE }), 'records.1.ts'],
      ['ts missing', () => JSON.stringify({ records: [valid(), { metrics: { voltage: 1 } }] }), 'records.1.ts'],
      ['batteryId of 65 characters', () => withSecond({ batteryId: 'b'.repeat(65) }), 'records.1.batteryId'],
      ['batteryId empty', () => withSecond({ batteryId: '' }), 'records.1.batteryId'],
      ['batteryId a number', () => withSecond({ batteryId: 2 }), 'records.1.batteryId'],
      ['an unknown property in a record', () => withSecond({ deviceId: 'gw-other' }), 'records.1.deviceId'],
      ['an unknown property at the top', () => JSON.stringify({ records: [valid()], deviceId: 'gw-other' }), 'deviceId'],
    ];

    it.each(cases)('%s', async (_name, body, field) => {
      const counts = await telemetryCounts(t.db);
      const lastSeen = (await deviceRow(t.db, device.deviceId))!.last_seen_at;

      const problem = expectProblem(await ingestRaw(t.api, device.accessToken, body()), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
      expect(await telemetryCounts(t.db)).toEqual(counts);
      expect((await deviceRow(t.db, device.deviceId))!.last_seen_at).toEqual(lastSeen);
    });

    it('the valid record alone is stored (the cases above fail on their own record)', async () => {
      const { data } = await ingest(t.api, device.accessToken, [valid()]);

      expect(data).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
    });
  });

  describe('body size: this route takes up to 1 MiB, others their default of 256 KiB', () => {
    it('a valid batch of about 900 KiB (500 records × 64 metrics) is stored', async () => {
      const device = await registerDevice(t.api);
      const raw = JSON.stringify({ records: aWideBatch(500, 20, now - 3 * HOUR) });
      expect(raw.length).toBeGreaterThan(880 * KIB);
      expect(raw.length).toBeLessThan(MIB);

      const { data, response } = await ingestRaw(t.api, device.accessToken, raw);

      expect(response.status).toBe(200);
      expect(data).toEqual({ accepted: 500, duplicates: 0, rejected: [] });
      expect(await telemetryRows(t.db, device.deviceId)).toHaveLength(500);
    });

    it('a body of exactly 1 MiB passes the size check (refused for its content, not its size)', async () => {
      const device = await registerDevice(t.api);
      const raw = padTo(MIB, { records: [{ ts: iso(now - MINUTE), metrics: { voltage: 1 } }] });

      expectProblem(await ingestRaw(t.api, device.accessToken, raw), 400, 'VALIDATION_FAILED');
    });

    it('one byte over 1 MiB: 413 PAYLOAD_TOO_LARGE, nothing stored', async () => {
      const device = await registerDevice(t.api);
      const counts = await telemetryCounts(t.db);
      const raw = padTo(MIB + 1, { records: [{ ts: iso(now - MINUTE), metrics: { voltage: 1 } }] });

      expectProblem(await ingestRaw(t.api, device.accessToken, raw), 413, 'PAYLOAD_TOO_LARGE');
      expect(await telemetryCounts(t.db)).toEqual(counts);
    });

    it('a batch of about 300 KiB: stored by /telemetry, but 413 at /device/login (256 KiB)', async () => {
      const device = await registerDevice(t.api);
      const raw = JSON.stringify({ records: aWideBatch(155, 22, now - 2 * HOUR) });
      expect(raw.length).toBeGreaterThan(290 * KIB);
      expect(raw.length).toBeLessThan(310 * KIB);

      const stored = await ingestRaw(t.api, device.accessToken, raw);
      const login = await t.api.POST('/api/v1/device/login', { body: {} as never, bodySerializer: () => raw, headers: { 'content-type': 'application/json' } });

      expect(stored.response.status).toBe(200);
      expect(stored.data).toEqual({ accepted: 155, duplicates: 0, rejected: [] });
      expectProblem(login, 413, 'PAYLOAD_TOO_LARGE');
    });
  });

  describe('auth: only a device token, and only for its own device', () => {
    const batch = (): TelemetryRecordBody[] => [{ ts: iso(now - 7 * MINUTE), metrics: { voltage: 3 } }];

    it('without a token: 401 UNAUTHORIZED, nothing stored', async () => {
      const counts = await telemetryCounts(t.db);

      expectProblem(await ingestRaw(t.api, undefined, JSON.stringify({ records: batch() })), 401, 'UNAUTHORIZED');
      expect(await telemetryCounts(t.db)).toEqual(counts);
    });

    it('with a token that is not a JWT: 401 UNAUTHORIZED', async () => {
      expectProblem(await ingest(t.api, 'not-a-jwt', batch()), 401, 'UNAUTHORIZED');
    });

    it("with a customer's access token: 401 UNAUTHORIZED, nothing stored", async () => {
      const customer = await aVerifiedCustomer(t);
      const counts = await telemetryCounts(t.db);

      const result = await t.api.POST('/api/v1/telemetry', { body: { records: batch() } as never, headers: bearer(customer.accessToken) });

      expectProblem(result, 401, 'UNAUTHORIZED');
      expect(await telemetryCounts(t.db)).toEqual(counts);
    });

    it("device A's records land under A only; naming device B in the body is refused", async () => {
      const [a, b] = [await registerDevice(t.api), await registerDevice(t.api)];

      expect((await ingest(t.api, a.accessToken, batch())).data).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
      const named = await ingestRaw(t.api, a.accessToken, JSON.stringify({ deviceId: b.deviceId, records: [{ ts: iso(now - 8 * MINUTE), metrics: { voltage: 4 } }] }));
      const inRecord = await ingestRaw(t.api, a.accessToken, JSON.stringify({ records: [{ deviceId: b.deviceId, ts: iso(now - 9 * MINUTE), metrics: { voltage: 5 } }] }));

      expectProblem(named, 400, 'VALIDATION_FAILED');
      expectProblem(inRecord, 400, 'VALIDATION_FAILED');
      expect(stored(await telemetryRows(t.db, a.deviceId))).toEqual([{ deviceId: a.deviceId, batteryId: 'main', ts: batch()[0].ts, metrics: { voltage: 3 } }]);
      expect(await telemetryRows(t.db, b.deviceId)).toEqual([]);
      expect(await latestRows(t.db, b.deviceId)).toEqual([]);
      expect(await rollupRows(t.db, b.deviceId)).toEqual({ '5m': [], '1h': [], '6h': [], '1d': [] });
      expect((await deviceRow(t.db, b.deviceId))!.last_seen_at).toBeNull();
    });

    it('B ingesting the same ts as A is no duplicate of it: both are stored, each under its own device', async () => {
      const [a, b] = [await registerDevice(t.api), await registerDevice(t.api)];
      const ts = iso(now - 11 * MINUTE);

      expect((await ingest(t.api, a.accessToken, [{ ts, metrics: { voltage: 1 } }])).data).toEqual({ accepted: 1, duplicates: 0, rejected: [] });
      expect((await ingest(t.api, b.accessToken, [{ ts, metrics: { voltage: 2 } }])).data).toEqual({ accepted: 1, duplicates: 0, rejected: [] });

      expect(stored(await telemetryRows(t.db, a.deviceId))).toEqual([{ deviceId: a.deviceId, batteryId: 'main', ts, metrics: { voltage: 1 } }]);
      expect(stored(await telemetryRows(t.db, b.deviceId))).toEqual([{ deviceId: b.deviceId, batteryId: 'main', ts, metrics: { voltage: 2 } }]);
    });
  });
});


/** Valid JSON of exactly `bytes` bytes: the object plus an ASCII `pad` property. */
function padTo(bytes: number, value: object): string {
  const empty = JSON.stringify({ ...value, pad: '' });
  return JSON.stringify({ ...value, pad: 'x'.repeat(bytes - empty.length) });
}
