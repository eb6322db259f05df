import { aClaimedDevice, aCustomer, type SignedIn } from '../support/claim-fixtures.js';
import { sharedSecrets, startTestApp, type TestApp } from '../support/create-test-app.js';
import { createTestDatabase } from '../support/postgres.js';
import { DAY, HOUR, MINUTE, ingest, ingestAll, iso, type HistoryBody, type HistoryQuery, type TelemetryRecordBody } from '../support/telemetry.js';

/**
 * The history cache (HISTORY_CACHE_MB, per instance) keeps the buckets of whole check slots (an
 * hour of 5-minute buckets, 6 hours of hourly ones, a day of 6-hour ones, 5 minutes of 1-minute
 * ones) and reuses one only while its slot's rollup row counts the same records. Nothing of that
 * may show: instance A (cache on, the default) and instance B (HISTORY_CACHE_MB=0) serve the same
 * database, and every answer of A, asked once or again, late records or retried batches between,
 * is the bytes and the ETag of B's.
 */

/** A deterministic generator of numbers in [0, 1) (a 32-bit LCG): irregular, and the same every run. */
function numbers(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

interface Stretch {
  from: number;
  to: number;
}

/**
 * Records from `start` to `end` at irregular times: bursts 5–40 s apart (several per 5-minute
 * bucket), then minutes apart, now and then 5–20 minutes, rarely up to 2.5 hours of nothing;
 * always every 5–40 s in `dense`, never any in `gap`. pack-2 reports at about 70 % of the
 * instants, a second and a bit after main; it reports soc only in the first half of each UTC day.
 */
function dataset(start: number, end: number, dense: Stretch, gap: Stretch): TelemetryRecordBody[] {
  const random = numbers(20_240_611);
  const records: TelemetryRecordBody[] = [];
  for (let at = start; at < end; ) {
    if (at >= gap.from && at < gap.to) {
      at = gap.to + Math.floor(random() * 90_000);
      continue;
    }
    const voltage = Math.round((47 + random() * 6) * 1000) / 1000;
    const current = Math.round((-20 + random() * 40) * 100) / 100;
    const soc = Math.round((20 + random() * 80) * 10) / 10;
    records.push({ ts: iso(at), batteryId: 'main', metrics: { voltage, current, soc } });
    if (random() < 0.7) {
      const metrics: Record<string, number> = { voltage: Math.round((voltage - 0.25 + random() * 0.5) * 1000) / 1000, current: Math.round((current * 0.9) * 100) / 100 };
      if (at % DAY < DAY / 2) metrics.soc = Math.round((soc - 1.5) * 10) / 10;
      records.push({ ts: iso(at + 1_000 + Math.floor(random() * 400)), batteryId: 'pack-2', metrics });
    }
    const r = random();
    const step =
      (at >= dense.from && at < dense.to) || r < 0.6
        ? 5_000 + Math.floor(random() * 35_000)
        : r < 0.9
          ? MINUTE + Math.floor(random() * 3 * MINUTE)
          : r < 0.985
            ? 5 * MINUTE + Math.floor(random() * 15 * MINUTE)
            : 30 * MINUTE + Math.floor(random() * 2 * HOUR);
    // No step over the dense stretch.
    at = at < dense.from && at + step > dense.from ? dense.from + 1_234 : at + step;
  }
  return records;
}

describe('history cache: an instance that keeps whole slots answers what an instance without it answers', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  /** HISTORY_CACHE_MB at its default. */
  let a: TestApp;
  /** HISTORY_CACHE_MB=0: every answer read from the database. */
  let b: TestApp;
  let owner: SignedIn;
  let deviceId: string;
  let deviceToken: string;

  const now = Date.now();
  /** A UTC midnight at least 4 days and 2 hours before now: every range below has ended, and every record is well inside retention. */
  const midnight = Math.floor((now - 4 * DAY - 2 * HOUR) / DAY) * DAY;
  const start = midnight - 9 * HOUR - 17 * MINUTE - 13_250;
  const end = midnight + 2 * DAY + 14 * HOUR;
  /** Always several records per 5 minutes: the middle of the first range below. */
  const dense = { from: midnight + 17 * HOUR, to: midnight + 18 * HOUR + 10 * MINUTE };
  /** No record at all: whole hours without a rollup row. */
  const gap = { from: midnight + DAY + 9 * HOUR + 20 * MINUTE, to: midnight + DAY + 12 * HOUR + 40 * MINUTE };
  const records = dataset(start, end, dense, gap);
  const stored = new Set(records.map((record) => `${record.batteryId}|${Date.parse(record.ts)}`));

  /** A record at an instant no stored record of its battery has: ingested later, it is accepted. */
  function late(at: number, batteryId: string, metrics: Record<string, number>): TelemetryRecordBody {
    const key = `${batteryId}|${at}`;
    if (stored.has(key)) throw new Error(`${iso(at)} of ${batteryId} is in the dataset already`);
    stored.add(key);
    return { ts: iso(at), batteryId, metrics };
  }

  type Answer = { status: number; body: string; etag: string | null };

  /** The history as the server sent it: status, the body's text untouched, the ETag. */
  async function ask(t: TestApp, query: HistoryQuery, ifNoneMatch?: string): Promise<Answer> {
    const { data, response } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', {
      params: { path: { deviceId }, query },
      headers: { ...owner.headers, ...(ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch }) },
      parseAs: 'text',
    });
    return { status: response.status, body: response.status === 200 ? (data ?? '') : '', etag: response.headers.get('etag') };
  }

  /** A twice, then B: three 200s with the same bytes and the same ETag (every range here has ended, so there is one). Returns A's answer. */
  async function expectSameAnswers(query: HistoryQuery): Promise<Answer> {
    const first = await ask(a, query);
    const again = await ask(a, query);
    const uncached = await ask(b, query);
    expect(first.status).toBe(200);
    expect(first.etag).toMatch(/^"h-/);
    expect(again).toEqual(first);
    expect(uncached).toEqual(first);
    return first;
  }

  const pointOf = (answer: Answer, metric: string, batteryId: string, bucketStart: number) =>
    (JSON.parse(answer.body) as HistoryBody).series.find((one) => one.metric === metric && one.batteryId === batteryId)?.points.find((point) => point.ts === iso(bucketStart));

  beforeAll(async () => {
    database = await createTestDatabase();
    const settings = sharedSecrets();
    a = await startTestApp(database.url, settings);
    b = await startTestApp(database.url, { ...settings, HISTORY_CACHE_MB: '0' });
    owner = await aCustomer(a);
    const device = await aClaimedDevice(a, owner);
    deviceId = device.body.deviceId;
    deviceToken = device.registered.accessToken;
    await ingestAll(a.api, deviceToken, records);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  type Range = [string, number, number];
  const ranges: Range[] = [
    ['24 hours with unaligned ends', midnight + 5 * HOUR + 13 * MINUTE + 27_500, midnight + DAY + 5 * HOUR + 13 * MINUTE + 27_500],
    ['3 aligned days', midnight, midnight + 3 * DAY],
    ['41 minutes across an hour in the dense stretch', dense.from + 32 * MINUTE + 5_250, dense.from + 73 * MINUTE + 5_250],
    ['from 1 ms after an hour boundary, across the gap', midnight + 7 * HOUR + 1, midnight + DAY + 19 * HOUR + 30 * MINUTE],
    ['the whole dataset, ends inside 5-minute buckets', start - 61_500, end + 3_333],
  ];
  const buckets = ['60', '300', '900', '3600', '7200', '21600', '86400', 'auto'];
  const filters: Array<Pick<HistoryQuery, 'metrics' | 'batteryId'>> = [
    { metrics: 'soc' },
    { batteryId: 'pack-2' },
    { metrics: 'voltage,current', batteryId: 'main' },
    { metrics: 'current' },
  ];

  describe.each(ranges)('%s', (_name, from, to) => {
    it.each(buckets.map((bucket, index) => [bucket, filters[index % filters.length]] as const))(
      'bucket=%s: asked twice with the cache and once without, the same bytes and ETag, with and without the filters %j',
      async (bucket, filter) => {
        expect(records.some((record) => Date.parse(record.ts) >= from && Date.parse(record.ts) < to)).toBe(true);
        const query: HistoryQuery = { from: iso(from), to: iso(to), bucket };

        const all = await expectSameAnswers(query);
        expect((JSON.parse(all.body) as HistoryBody).series.length).toBeGreaterThan(0);
        await expectSameAnswers({ ...query, ...filter });
      },
    );
  });

  /** Ended, so tagged; 5-minute buckets (auto), so its whole hours are kept. */
  const day: HistoryQuery = { from: iso(ranges[0][1]), to: iso(ranges[0][2]) };

  it('a late record in a kept hour: the next answer is read again, equals the uncached one, has the bucket one record more and a new ETag', async () => {
    const before = await ask(a, day);
    expect(before.status).toBe(200);
    // A whole hour in the middle of the range (the dense stretch), a main record there whose 5-minute bucket has room for one 0.777 s later.
    const hour = dense.from;
    const beside = records.find((record) => {
      const at = Date.parse(record.ts);
      return record.batteryId === 'main' && at >= hour + 5 * MINUTE && at < hour + 55 * MINUTE && at % (5 * MINUTE) < 5 * MINUTE - 1_000;
    });
    expect(beside).toBeDefined();
    const at = Date.parse(beside!.ts) + 777;
    const bucketStart = Math.floor(at / (5 * MINUTE)) * 5 * MINUTE;
    const countBefore = pointOf(before, 'voltage', 'main', bucketStart)!.count;

    await ingestAll(a.api, deviceToken, [late(at, 'main', { voltage: 51.234 })]);

    const after = await ask(a, day);
    const uncached = await ask(b, day);
    expect(after.status).toBe(200);
    expect(after.body).toBe(uncached.body);
    expect(after.etag).toBe(uncached.etag);
    expect(after.body).not.toBe(before.body);
    expect(after.etag).not.toBe(before.etag);
    expect(pointOf(after, 'voltage', 'main', bucketStart)!.count).toBe(countBefore + 1);
    expect(pointOf(after, 'current', 'main', bucketStart)).toEqual(pointOf(before, 'current', 'main', bucketStart));

    const withOldTag = await ask(a, day, before.etag!);
    expect(withOldTag.status).toBe(200);
    expect(withOldTag.body).toBe(after.body);
    expect((await ask(a, day, after.etag!)).status).toBe(304);
  });

  it('a retried batch, answered as duplicates, changes nothing: the held ETag is still a 304 and the answer the same bytes', async () => {
    const held = await ask(a, day);
    expect(held.status).toBe(200);
    const inRange = records.filter((record) => record.ts >= day.from! && record.ts < day.to!).slice(0, 300);
    expect(inRange).toHaveLength(300);

    const { data, response } = await ingest(a.api, deviceToken, inRange);

    expect(response.status).toBe(200);
    expect(data).toEqual({ accepted: 0, duplicates: 300, rejected: [] });
    expect((await ask(a, day, held.etag!)).status).toBe(304);
    expect(await ask(a, day)).toEqual(held);
    expect(await ask(b, day)).toEqual(held);
  });

  it('late records into several hours, in reverse time order, then the same batch again: with the cache the answers equal those without it after each', async () => {
    const questions: HistoryQuery[] = [
      day,
      { ...day, bucket: '60' },
      { ...day, bucket: '900', batteryId: 'pack-2' },
      { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '3600' },
      { from: iso(midnight), to: iso(midnight + 3 * DAY), bucket: '21600', metrics: 'soc,temperature' },
      { from: iso(midnight), to: iso(midnight + 3 * DAY) },
      { from: iso(midnight + 7 * HOUR + 1), to: iso(midnight + DAY + 19 * HOUR + 30 * MINUTE), bucket: '7200' },
      { from: iso(start - 61_500), to: iso(end + 3_333), bucket: '86400' },
    ];
    const lateBatch = [
      late(midnight + 3 * HOUR, 'main', { voltage: 49.5, current: 3.25 }),
      late(midnight + 5 * HOUR + 59 * MINUTE + 59_777, 'pack-2', { current: -7.5, soc: 55.5 }),
      late(midnight + 17 * HOUR + 3 * MINUTE + 777, 'main', { voltage: 52.125 }),
      // Into the gap: hours (and a 6-hour slot's part) that had no record at all.
      late(midnight + DAY + 10 * HOUR + 21 * MINUTE + 3_777, 'pack-2', { voltage: 50.75, current: 1.5 }),
      // A metric no record had: a new series.
      late(midnight + DAY + 20 * HOUR + 30 * MINUTE + 30_777, 'main', { temperature: 21.5, soc: 64.5 }),
      late(midnight + 2 * DAY + HOUR + 44 * MINUTE + 12_777, 'main', { soc: 71.25 }),
    ].reverse();
    const before: Answer[] = [];
    for (const query of questions) before.push(await expectSameAnswers(query));

    await ingestAll(a.api, deviceToken, lateBatch);

    const afterLate: Answer[] = [];
    for (const query of questions) afterLate.push(await expectSameAnswers(query));
    afterLate.forEach((answer, i) => {
      expect(answer.body).not.toBe(before[i].body);
      expect(answer.etag).not.toBe(before[i].etag);
    });

    const { data } = await ingest(a.api, deviceToken, lateBatch);
    expect(data).toEqual({ accepted: 0, duplicates: lateBatch.length, rejected: [] });

    for (const [i, query] of questions.entries()) {
      expect(await expectSameAnswers(query)).toEqual(afterLate[i]);
      expect((await ask(a, query, afterLate[i].etag!)).status).toBe(304);
    }
  });

  it('records landing in a kept edge slot: before the range they change nothing, inside it they count; with the cache the answers equal those without it', async () => {
    const from = Date.parse(day.from!);
    const to = Date.parse(day.to!);
    const slotMs = 5 * MINUTE;
    const firstSlot = Math.floor(from / slotMs) * slotMs;
    const lastSlot = Math.floor(to / slotMs) * slotMs;
    expect(firstSlot).toBeLessThan(from);
    expect(lastSlot).toBeLessThan(to);
    // Asked twice on A: the edge slots' records are kept by then.
    const held = await expectSameAnswers(day);

    // In the first edge slot, before the range: one more voltage, and a metric no record had.
    await ingestAll(a.api, deviceToken, [late(firstSlot + 1_777, 'main', { voltage: 49.25, humidity: 40.5 })]);

    const unchanged = await expectSameAnswers(day);
    expect(unchanged).toEqual(held);
    expect((JSON.parse(unchanged.body) as HistoryBody).series.map((series) => series.metric)).not.toContain('humidity');
    expect((await ask(a, day, held.etag!)).status).toBe(304);

    // Inside the range: just after its start, in the first edge slot, and in the last edge slot.
    await ingestAll(a.api, deviceToken, [late(from + 777, 'main', { voltage: 52.5 }), late(lastSlot + 1_111, 'pack-2', { current: 4.25 })]);

    const changed = await expectSameAnswers(day);
    expect(changed.body).not.toBe(held.body);
    expect(changed.etag).not.toBe(held.etag);
    expect(pointOf(changed, 'voltage', 'main', firstSlot)!.count).toBe((pointOf(held, 'voltage', 'main', firstSlot)?.count ?? 0) + 1);
    expect(pointOf(changed, 'current', 'pack-2', lastSlot)!.count).toBe((pointOf(held, 'current', 'pack-2', lastSlot)?.count ?? 0) + 1);
  });

  it('a range that starts before the first record: its empty edge slot is kept as read, and a record landing there later counts; the answers equal those without the cache', async () => {
    // 24 hours from 3 hours before the first record, both ends inside five-minute slots.
    const from = start - 3 * HOUR - 61_234;
    const before = { from: iso(from), to: iso(from + DAY) };
    const slotMs = 5 * MINUTE;
    const firstSlot = Math.floor(from / slotMs) * slotMs;
    expect(firstSlot).toBeLessThan(from);
    // Asked twice on A: the second answer takes the edge slots from the cache, the first of them empty.
    const held = await expectSameAnswers(before);
    expect(pointOf(held, 'voltage', 'main', firstSlot)).toBeUndefined();

    // Into that empty edge slot: one record before the range (nothing changes), one inside it (it counts).
    await ingestAll(a.api, deviceToken, [late(firstSlot + 7_000, 'main', { voltage: 48.5 })]);
    expect(await expectSameAnswers(before)).toEqual(held);
    await ingestAll(a.api, deviceToken, [late(from + 2_345, 'main', { voltage: 51.75 })]);

    const changed = await expectSameAnswers(before);
    expect(changed.etag).not.toBe(held.etag);
    expect(pointOf(changed, 'voltage', 'main', firstSlot)).toEqual({ ts: iso(firstSlot), avg: 51.75, min: 51.75, max: 51.75, count: 1 });
  });
});
