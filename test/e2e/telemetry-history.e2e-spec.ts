import { aRegistration, registerDevice } from '../support/builders.js';
import { Sql } from '../../src/shared/database/sql.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth } from '../support/customers.js';
import { expectProblem, fieldsOf } from '../support/problems.js';
import {
  DAY,
  HOUR,
  MINUTE,
  expectSeries,
  expectedSeries,
  history,
  ingest,
  ingestAll,
  iso,
  type HistoryQuery,
  type TelemetryRecordBody,
} from '../support/telemetry.js';

const BATTERIES = ['main', 'pack-2'];
const STEP_MS = 10_000;
const STEPS = 1080; // 3 hours
/** A 20-minute outage: no record at all, so whole buckets are empty. */
const GAP = { from: 400, to: 520 };

/**
 * The dataset: two batteries, one record every 10 s over 3 hours that ended an hour before `now`,
 * values from a formula. pack-2 reports soc only every third record, so series differ in length.
 */
function dataset(start: number): TelemetryRecordBody[] {
  const records: TelemetryRecordBody[] = [];
  for (let i = 0; i < STEPS; i++) {
    if (i >= GAP.from && i < GAP.to) continue;
    for (const batteryId of BATTERIES) {
      const metrics: Record<string, number> = {
        voltage: 48 + ((i * 7) % 13) * 0.25 + (batteryId === 'pack-2' ? 1.5 : 0),
        current: -10 + ((i * 11) % 17) * 0.75,
      };
      if (batteryId === 'main' || i % 3 === 0) metrics.soc = Math.round((100 - i * 0.05) * 100) / 100;
      records.push({ ts: iso(start + i * STEP_MS), batteryId, metrics });
    }
  }
  return records;
}

describe('GET /api/v1/dashboard/devices/:deviceId/telemetry/history', () => {
  let t: TestApp;
  let headers: { authorization: string };
  let deviceId: string;
  let deviceToken: string;
  /** Captured once; every timestamp below is relative to it and every ingested one lies before it. */
  const now = Date.now();
  /** The top of the hour at least 4 hours before now: the dataset starts 5-minute- and hour-aligned. */
  const start = Math.floor((now - 4 * HOUR) / HOUR) * HOUR;
  const end = start + STEPS * STEP_MS;
  const records = dataset(start);

  const read = (query: HistoryQuery) => history(t.api, headers, deviceId, query);

  beforeAll(async () => {
    t = await createTestApp();
    const owner = await aVerifiedCustomer(t);
    headers = customerAuth(owner.accessToken);
    const body = aRegistration();
    deviceToken = (await registerDevice(t.api, body)).accessToken;
    deviceId = body.deviceId;
    const claimed = await t.api.POST('/api/v1/user/devices/claim', { body: { deviceId, claimCode: body.claimCode }, headers });
    expect(claimed.response.status).toBe(200);
    await ingestAll(t.api, deviceToken, records);
  });
  afterAll(async () => {
    await t.close();
  });

  it('the dataset is what the test thinks it is', async () => {
    const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry WHERE device_id = $1', [deviceId]);

    expect(records).toHaveLength(2 * (STEPS - (GAP.to - GAP.from)));
    expect(rows[0].n).toBe(records.length);
    expect(end).toBeLessThan(now - HOUR + 1);
  });

  it("runs on sessions that keep one plan per named statement (the history statement is planned once per connection)", async () => {
    const rows = await t.app.get(Sql).rows<{ mode: string }>("SELECT current_setting('plan_cache_mode') AS mode");

    expect(rows).toEqual([{ mode: 'force_generic_plan' }]);
  });

  describe('buckets over the whole dataset equal the aggregates computed here', () => {
    it.each([60, 300, 900, 3600, 420, 7])('bucket=%d', async (bucketSec) => {
      const { data, response } = await read({ from: iso(start), to: iso(end), bucket: String(bucketSec) });

      expect(response.status).toBe(200);
      expect(data).toEqual(expect.objectContaining({ deviceId, from: iso(start), to: iso(end), bucketSec, nextCursor: null }));
      expect(data!.records).toBeUndefined();
      expectSeries(data!.series, expectedSeries(records, { from: start, to: end, bucketSec }));
      expect(data!.series).toHaveLength(6);
      for (const series of data!.series) {
        const times = series.points.map((point) => Date.parse(point.ts));
        expect(times).toEqual([...times].sort((a, b) => a - b));
        expect(new Set(times).size).toBe(times.length);
      }
    });

    it('empty buckets are omitted: no 5-minute point inside the outage', async () => {
      const { data } = await read({ from: iso(start), to: iso(end), bucket: '300' });
      const inGap = [4200, 4500, 4800].map((second) => iso(start + second * 1000));

      for (const series of data!.series) {
        const times = series.points.map((point) => point.ts);
        for (const ts of inGap) expect(times).not.toContain(ts);
        expect(times).toContain(iso(start + 3900_000));
        expect(times).toContain(iso(start + 5100_000));
      }
    });

    it('soc of pack-2 counts only the records that carry it', async () => {
      const { data } = await read({ from: iso(start), to: iso(start + HOUR), bucket: '3600' });

      const soc = data!.series.find((series) => series.metric === 'soc' && series.batteryId === 'pack-2')!;
      expect(soc.points).toEqual([expect.objectContaining({ ts: iso(start), count: 120 })]);
      const voltage = data!.series.find((series) => series.metric === 'voltage' && series.batteryId === 'pack-2')!;
      expect(voltage.points).toEqual([expect.objectContaining({ ts: iso(start), count: 360 })]);
    });
  });

  describe('filters', () => {
    it('metrics=voltage,soc: only those metrics, both batteries', async () => {
      const { data } = await read({ from: iso(start), to: iso(end), bucket: '900', metrics: 'voltage,soc' });

      expectSeries(data!.series, expectedSeries(records, { from: start, to: end, bucketSec: 900, metrics: ['voltage', 'soc'] }));
      expect(data!.series.map((series) => `${series.metric}/${series.batteryId}`).sort()).toEqual(['soc/main', 'soc/pack-2', 'voltage/main', 'voltage/pack-2']);
    });

    it('batteryId=pack-2: only that battery, every metric', async () => {
      const { data } = await read({ from: iso(start), to: iso(end), bucket: '300', batteryId: 'pack-2' });

      expectSeries(data!.series, expectedSeries(records, { from: start, to: end, bucketSec: 300, batteryId: 'pack-2' }));
      expect(data!.series.map((series) => series.batteryId)).toEqual(['pack-2', 'pack-2', 'pack-2']);
    });

    it('both filters, with an unaligned range (rollup and raw edges)', async () => {
      const query = { from: start + 137_000, to: end - 71_000, bucketSec: 3600, metrics: ['current'], batteryId: 'main' };

      const { data } = await read({ from: iso(query.from), to: iso(query.to), bucket: '3600', metrics: 'current', batteryId: 'main' });

      expectSeries(data!.series, expectedSeries(records, query));
      expect(data!.series).toHaveLength(1);
    });

    it('a metric nobody reported, or a battery that does not exist: no series', async () => {
      expect((await read({ from: iso(start), to: iso(end), bucket: '300', metrics: 'power' })).data!.series).toEqual([]);
      expect((await read({ from: iso(start), to: iso(end), bucket: '300', batteryId: 'pack-9' })).data!.series).toEqual([]);
    });
  });

  describe('the 5-minute rollup answers exactly what the raw records would', () => {
    type Range = [string, number, number];
    const ranges: Range[] = [
      ['from +137 s, to −71 s', 137_000, -71_000],
      ['from +1 ms, to −1 ms', 1, -1],
      ['+299 s … +601 s: one whole slot between two partial ones', 299_000, -(STEPS * STEP_MS) + 601_000],
      ['inside one 5-minute slot (+310 s … +590 s)', 310_000, -(STEPS * STEP_MS) + 590_000],
      ['across the outage (+3 999 s … +5 201 s)', 3_999_000, -(STEPS * STEP_MS) + 5_201_000],
    ];

    describe.each(ranges)('%s', (_name, fromOffset, toOffset) => {
      it.each([300, 900, 3600, 600, 60, 7])('bucket=%d', async (bucketSec) => {
        const from = start + fromOffset;
        const to = end + toOffset;

        const { data, response } = await read({ from: iso(from), to: iso(to), bucket: String(bucketSec) });

        expect(response.status).toBe(200);
        expectSeries(data!.series, expectedSeries(records, { from, to, bucketSec }));
      });
    });

    it('a retried batch changes no aggregate', async () => {
      const { data: retried } = await ingest(t.api, deviceToken, records.slice(0, 500));
      expect(retried).toEqual({ accepted: 0, duplicates: 500, rejected: [] });

      const { data } = await read({ from: iso(start + 137_000), to: iso(end - 71_000), bucket: '300' });

      expectSeries(data!.series, expectedSeries(records, { from: start + 137_000, to: end - 71_000, bucketSec: 300 }));
    });
  });

  describe('bucket=auto: the smallest of 60, 300, 900, 3600, 21600, 86400 s giving ≤ 500 points', () => {
    it.each([
      ['1 hour', 60, HOUR],
      ['6 hours', 60, 6 * HOUR],
      ['500 minutes (exactly 500 one-minute points)', 60, 500 * MINUTE],
      ['500 minutes and 1 second', 300, 500 * MINUTE + 1000],
      ['24 hours', 300, DAY],
      ['2 days', 900, 2 * DAY],
      ['7 days', 3600, 7 * DAY],
      ['30 days', 21_600, 30 * DAY],
      ['366 days', 86_400, 366 * DAY],
    ])('%s → %d s', async (_name, bucketSec, span) => {
      const { data, response } = await read({ from: iso(end - span), to: iso(end), bucket: 'auto' });

      expect(response.status).toBe(200);
      expect(data!.bucketSec).toBe(bucketSec);
      expectSeries(data!.series, expectedSeries(records, { from: end - span, to: end, bucketSec }));
    });

    it('without bucket, from and to: the last 24 hours in 5-minute buckets', async () => {
      const before = Date.now();
      const { data } = await read({});

      expect(data!.bucketSec).toBe(300);
      expect(Date.parse(data!.to)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(data!.to) - Date.parse(data!.from)).toBe(DAY);
    });
  });

  describe('bucket=raw: the records, paginated', () => {
    const sorted = [...records].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts) || (a.batteryId! < b.batteryId! ? -1 : 1));

    async function pages(query: HistoryQuery, maxPages: number) {
      const result: Array<{ count: number; nextCursor: string | null }> = [];
      const seen: Array<{ ts: string; batteryId: string; metrics: Record<string, number> }> = [];
      let cursor: string | undefined;
      do {
        const { data, response, error } = await read(cursor === undefined ? query : { ...query, cursor });
        expect({ status: response.status, error }).toEqual({ status: 200, error: undefined });
        expect(data!.bucketSec).toBeNull();
        expect(data!.series).toEqual([]);
        seen.push(...data!.records!);
        result.push({ count: data!.records!.length, nextCursor: data!.nextCursor });
        cursor = data!.nextCursor ?? undefined;
      } while (cursor !== undefined && result.length <= maxPages);
      return { pages: result, records: seen };
    }

    it('limit 50: pages cover every record exactly once, ascending by ts, the last with nextCursor null', async () => {
      const expectedPages = Math.ceil(records.length / 50);

      const { pages: answered, records: seen } = await pages({ from: iso(start), to: iso(end), bucket: 'raw', limit: 50 }, expectedPages);

      expect(answered).toHaveLength(expectedPages);
      expect(answered.slice(0, -1).every((page) => page.count === 50)).toBe(true);
      expect(answered[answered.length - 1].nextCursor).toBeNull();
      expect(seen).toEqual(sorted.map((record) => ({ ts: record.ts, batteryId: record.batteryId, metrics: record.metrics })));
    });

    it('limit 3 splits the two batteries of one instant across pages without losing or repeating one', async () => {
      const from = start + 600_000;
      const to = from + 120_000;

      const { records: seen } = await pages({ from: iso(from), to: iso(to), bucket: 'raw', limit: 3 }, 20);

      const expected = sorted.filter((record) => Date.parse(record.ts) >= from && Date.parse(record.ts) < to);
      expect(expected).toHaveLength(24);
      expect(seen).toEqual(expected.map((record) => ({ ts: record.ts, batteryId: record.batteryId, metrics: record.metrics })));
    });

    it('with batteryId: only that battery, across pages', async () => {
      const from = start;
      const to = start + 10 * MINUTE;

      const { records: seen } = await pages({ from: iso(from), to: iso(to), bucket: 'raw', limit: 7, batteryId: 'pack-2' }, 20);

      expect(seen).toEqual(
        sorted
          .filter((record) => record.batteryId === 'pack-2' && Date.parse(record.ts) < to)
          .map((record) => ({ ts: record.ts, batteryId: record.batteryId, metrics: record.metrics })),
      );
    });

    it.each([
      ['a space', 'pack 1'],
      ['a vertical bar', 'pack|1'],
    ])('a batteryId with %s is refused at ingest, so every stored id pages cleanly', async (_name, batteryId) => {
      const body = aRegistration();
      const registered = await registerDevice(t.api, body);
      const odd: TelemetryRecordBody[] = [0, 1, 2].map((i) => ({ ts: iso(start + i * STEP_MS), batteryId, metrics: { voltage: i } }));

      const problem = expectProblem(await ingest(t.api, registered.accessToken, odd), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain('records.0.batteryId');
      expect((await t.db.query('SELECT count(*)::int AS n FROM telemetry WHERE device_id = $1', [body.deviceId])).rows[0].n).toBe(0);
    });

    it.each([
      ['limit 1001', { limit: 1001 }, 'limit'],
      ['limit 0', { limit: 0 }, 'limit'],
      ['a garbage cursor', { cursor: '***' }, 'cursor'],
      ['a cursor of another shape', { cursor: Buffer.from('not-a-time|main', 'utf8').toString('base64url') }, 'cursor'],
      // These reached PostgreSQL (500) or were read leniently (200).
      ['a cursor with a year PostgreSQL cannot store', { cursor: Buffer.from('-271821-04-20T00:00:00.000Z|main', 'utf8').toString('base64url') }, 'cursor'],
      ['a cursor with an instant read leniently ("1")', { cursor: Buffer.from('1|main', 'utf8').toString('base64url') }, 'cursor'],
      ['a cursor with 30 February', { cursor: Buffer.from('2026-02-30T00:00:00.000Z|main', 'utf8').toString('base64url') }, 'cursor'],
    ] as Array<[string, HistoryQuery, string]>)('%s: 400 naming the field', async (_name, query, field) => {
      const problem = expectProblem(await read({ from: iso(start), to: iso(end), bucket: 'raw', ...query }), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
    });

    // Bucket answers have no pages, and a cursor there was silently ignored (200).
    it.each([undefined, 'auto', '300', '86400'])('a cursor with bucket=%s (not raw): 400 naming cursor, a valid one and garbage alike', async (bucket) => {
      const page = await read({ from: iso(start), to: iso(end), bucket: 'raw', limit: 5 });
      const valid = page.data!.nextCursor!;
      expect(valid).toEqual(expect.any(String));

      for (const cursor of [valid, '***', 'bm90LWEtY3Vyc29y']) {
        const problem = expectProblem(await read({ from: iso(start), to: iso(end), ...(bucket === undefined ? {} : { bucket }), cursor }), 400, 'VALIDATION_FAILED');
        expect(fieldsOf(problem)).toEqual(['cursor']);
      }
    });
  });

  describe('bad parameters: 400 VALIDATION_FAILED naming the field', () => {
    const range = () => ({ from: iso(start), to: iso(end) });
    it.each([
      ['from after to', () => ({ from: iso(end), to: iso(start) }), 'from'],
      ['from equal to to', () => ({ from: iso(start), to: iso(start) }), 'from'],
      ['a range of 366 days and 1 second', () => ({ from: iso(end - 366 * DAY - 1000), to: iso(end) }), 'to'],
      ['bucket abc', () => ({ ...range(), bucket: 'abc' }), 'bucket'],
      ['bucket 0', () => ({ ...range(), bucket: '0' }), 'bucket'],
      ['bucket -5', () => ({ ...range(), bucket: '-5' }), 'bucket'],
      ['bucket 1.5', () => ({ ...range(), bucket: '1.5' }), 'bucket'],
      ['bucket 1 over 2 hours (7 200 points)', () => ({ from: iso(start), to: iso(start + 2 * HOUR), bucket: '1' }), 'bucket'],
      ['from without a zone', () => ({ from: iso(start).slice(0, 19), to: iso(end) }), 'from'],
      ['to without a zone', () => ({ from: iso(start), to: iso(end).slice(0, 19) }), 'to'],
      ['from garbage', () => ({ from: 'last tuesday', to: iso(end) }), 'from'],
      ['metrics with a bad name', () => ({ ...range(), metrics: 'voltage,Bad-Name' }), 'metrics'],
      ['metrics empty', () => ({ ...range(), metrics: ',' }), 'metrics'],
      ['batteryId with a space', () => ({ ...range(), batteryId: 'pack 2' }), 'batteryId'],
    ] as Array<[string, () => HistoryQuery, string]>)('%s', async (_name, query, field) => {
      const problem = expectProblem(await read(query()), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
    });

    it('bucket 2 over the same 2 hours (3 600 points) is allowed', async () => {
      const { data, response } = await read({ from: iso(start), to: iso(start + 2 * HOUR), bucket: '2' });

      expect(response.status).toBe(200);
      expect(data!.bucketSec).toBe(2);
    });

    it('exactly 366 days is allowed', async () => {
      const { response } = await read({ from: iso(end - 366 * DAY), to: iso(end), bucket: '86400' });

      expect(response.status).toBe(200);
    });
  });
});
