import { aRegistration, registerDevice } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth } from '../support/customers.js';
import {
  DAY,
  HOUR,
  MINUTE,
  ROLLUP_LEVELS,
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
} from '../support/telemetry.js';

const BATTERIES = ['main', 'pack-2'];
const STEP_MS = 4 * MINUTE;

/**
 * Three and a half days of records every 4 minutes for two batteries, starting 2 h 17 min before
 * a UTC midnight: the range crosses day, hour and 5-minute boundaries, and every level is needed.
 * pack-2 skips a whole day-long stretch of soc, so series differ.
 */
function dataset(start: number, end: number): TelemetryRecordBody[] {
  const records: TelemetryRecordBody[] = [];
  for (let at = start, i = 0; at < end; at += STEP_MS, i++) {
    for (const batteryId of BATTERIES) {
      const metrics: Record<string, number> = { voltage: 48 + ((i * 7) % 13) * 0.25, current: -10 + ((i * 11) % 17) * 0.75 };
      if (batteryId === 'main' || i % 900 < 300) metrics.soc = Math.round((100 - (i % 500) * 0.1) * 100) / 100;
      records.push({ ts: iso(at), batteryId, metrics });
    }
  }
  return records;
}

describe('hourly, 6-hour and daily rollups: trends over days read the coarsest exact level', () => {
  let t: TestApp;
  let headers: { authorization: string };
  let deviceId: string;
  let deviceToken: string;
  const now = Date.now();
  /** A UTC midnight at least 4 days and 2 hours before now. */
  const midnight = Math.floor((now - 4 * DAY - 2 * HOUR) / DAY) * DAY;
  const start = midnight - 2 * HOUR - 17 * MINUTE;
  const end = midnight + 3 * DAY + 5 * HOUR;
  const records = dataset(start, end);
  /** Sent after the rest, out of order: a gateway catching up after an outage. */
  const late = records.filter((_, index) => index % 37 === 5);
  const onTime = records.filter((_, index) => index % 37 !== 5);

  const read = (query: HistoryQuery) => history(t.api, headers, deviceId, query);

  beforeAll(async () => {
    // The marks below change a rollup row without its count, which no write of the service does:
    // with the history cache on, a slot answered earlier in this file would come from memory.
    t = await createTestApp({ HISTORY_CACHE_MB: '0' });
    const owner = await aVerifiedCustomer(t);
    headers = customerAuth(owner.accessToken);
    const body = aRegistration();
    deviceToken = (await registerDevice(t.api, body)).accessToken;
    deviceId = body.deviceId;
    const claimed = await t.api.POST('/api/v1/user/devices/claim', { body: { deviceId, claimCode: body.claimCode }, headers });
    expect(claimed.response.status).toBe(200);
    await ingestAll(t.api, deviceToken, onTime);
    await ingestAll(t.api, deviceToken, [...late].reverse());
  });
  afterAll(async () => {
    await t.close();
  });

  it('every level holds the aggregates of the records, late ones included', async () => {
    const levels = await rollupRows(t.db, deviceId);

    expect(levels).toEqual(expectedRollup(records));
    expect(levels['1d'].map((row) => row.bucket.toISOString())).toContain(iso(midnight + DAY));
    expect(new Set(levels['1d'].map((row) => row.bucket.getTime())).size).toBe(5);
  });

  it('a retried batch changes no level', async () => {
    const before = await rollupRows(t.db, deviceId);

    const { data } = await ingest(t.api, deviceToken, records.slice(0, 400));

    expect(data).toEqual({ accepted: 0, duplicates: 400, rejected: [] });
    expect(await rollupRows(t.db, deviceId)).toEqual(before);
  });

  type Range = [string, number, number];
  const ranges: Range[] = [
    ['the whole dataset', start, end],
    ['three aligned days', midnight, midnight + 3 * DAY],
    ['unaligned ends 3 min and 7 s inside hours', midnight - HOUR - 3 * MINUTE - 7_000, midnight + 2 * DAY + 4 * HOUR + 7 * MINUTE + 31_000],
    ['one millisecond inside each day boundary', midnight + 1, midnight + 2 * DAY - 1],
    ['less than a day, across midnight', midnight - 5 * HOUR - 1_000, midnight + 7 * HOUR + 1_000],
  ];

  describe.each(ranges)('%s', (_name, from, to) => {
    it.each([86_400, 172_800, 21_600, 7_200, 3_600, 900, 300, 420])('bucket=%d equals the aggregate of the raw records', async (bucketSec) => {
      const { data, response } = await read({ from: iso(from), to: iso(to), bucket: String(bucketSec) });

      expect(response.status).toBe(200);
      expect(data!.bucketSec).toBe(bucketSec);
      expectSeries(data!.series, expectedSeries(records, { from, to, bucketSec }));
    });
  });

  it('filters apply at every level', async () => {
    const query = { from: midnight - HOUR - 1_000, to: midnight + 2 * DAY + 2 * HOUR + 1_000, bucketSec: 86_400, metrics: ['soc'], batteryId: 'pack-2' };

    const { data } = await read({ from: iso(query.from), to: iso(query.to), bucket: '86400', metrics: 'soc', batteryId: 'pack-2' });

    expectSeries(data!.series, expectedSeries(records, query));
    expect(data!.series).toHaveLength(1);
  });

  it('bucket=auto over the 3.5 days picks 15 minutes (≤ 500 points) and matches the raw aggregates', async () => {
    const { data } = await read({ from: iso(start), to: iso(end) });

    expect(data!.bucketSec).toBe(900);
    expectSeries(data!.series, expectedSeries(records, { from: start, to: end, bucketSec: 900 }));
  });

  /**
   * Which level answered is not visible in a correct answer, so these mark one slot of a level,
   * look for the mark in the answer, and then put the slot's true maximum (from the raw records) back.
   */
  describe('the coarsest exact level is the one read', () => {
    async function withMarkedSlot(level: keyof typeof ROLLUP_LEVELS, bucket: number, query: HistoryQuery): Promise<number | undefined> {
      const { table } = ROLLUP_LEVELS[level];
      const marked = await t.db.query(`UPDATE ${table} SET max = 1e6 WHERE device_id = $1 AND bucket = $2 AND metric = 'voltage' AND battery_id = 'main'`, [
        deviceId,
        new Date(bucket),
      ]);
      expect(marked.rowCount).toBe(1);
      try {
        const { data } = await read({ ...query, metrics: 'voltage', batteryId: 'main' });
        const answer = data!;
        const bucketMs = answer.bucketSec! * 1000;
        return answer.series[0].points.find((point) => Date.parse(point.ts) === Math.floor(bucket / bucketMs) * bucketMs)?.max;
      } finally {
        const { rows } = await t.db.query<{ max: number }>(
          `SELECT max(((t.metrics ->> 'voltage'))::float8) AS max FROM telemetry t WHERE t.device_id = $1 AND t.battery_id = 'main' AND t.ts >= $2 AND t.ts < $3`,
          [deviceId, new Date(bucket), new Date(bucket + ROLLUP_LEVELS[level].widthMs)],
        );
        await t.db.query(`UPDATE ${table} SET max = $3 WHERE device_id = $1 AND bucket = $2 AND metric = 'voltage' AND battery_id = 'main'`, [deviceId, new Date(bucket), rows[0].max]);
      }
    }

    it('daily buckets over whole days: the daily rollup', async () => {
      expect(await withMarkedSlot('1d', midnight + DAY, { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '86400' })).toBe(1e6);
      expect(await withMarkedSlot('6h', midnight + DAY + 6 * HOUR, { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '86400' })).not.toBe(1e6);
      expect(await withMarkedSlot('1h', midnight + DAY + 5 * HOUR, { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '86400' })).not.toBe(1e6);
    });

    it('6-hour buckets: the 6-hour rollup, not the hourly or the daily one', async () => {
      expect(await withMarkedSlot('6h', midnight + DAY + 6 * HOUR, { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '21600' })).toBe(1e6);
      expect(await withMarkedSlot('1h', midnight + DAY + 5 * HOUR, { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '21600' })).not.toBe(1e6);
      expect(await withMarkedSlot('1d', midnight + DAY, { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '21600' })).not.toBe(1e6);
    });

    it('2-hour buckets: the hourly rollup, since a 6-hour slot cannot answer them', async () => {
      expect(await withMarkedSlot('1h', midnight + DAY + 5 * HOUR, { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '7200' })).toBe(1e6);
      expect(await withMarkedSlot('6h', midnight + DAY + 6 * HOUR, { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '7200' })).not.toBe(1e6);
    });

    it('an hour cut by the range end: 5-minute slots there, hours before', async () => {
      const to = midnight + DAY + 5 * HOUR + 40 * MINUTE;
      expect(await withMarkedSlot('5m', midnight + DAY + 5 * HOUR + 20 * MINUTE, { from: iso(midnight), to: iso(to), bucket: '3600' })).toBe(1e6);
      expect(await withMarkedSlot('1h', midnight + DAY + 4 * HOUR, { from: iso(midnight), to: iso(to), bucket: '3600' })).toBe(1e6);
    });

    it('the marks were taken back: the answers equal the raw aggregates again', async () => {
      const { data } = await read({ from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '86400' });

      expectSeries(data!.series, expectedSeries(records, { from: midnight, to: midnight + 3 * DAY, bucketSec: 86_400 }));
      expect(await rollupRows(t.db, deviceId)).toEqual(expectedRollup(records));
    });
  });
});
