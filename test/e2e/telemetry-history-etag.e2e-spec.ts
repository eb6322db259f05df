import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';
import { HOUR, MINUTE, history, ingest, ingestAll, iso, type HistoryQuery, type TelemetryRecordBody } from '../support/telemetry.js';

/**
 * History answers over a range that has ended carry a strong ETag: If-None-Match with it is a 304
 * without a body until a record lands in the range (a late upload), and then a 200 with the new
 * answer and a new tag. Records outside the range, and questions about ranges still running or
 * raw pages, carry none of this.
 */
describe('history ETags (If-None-Match → 304 for ranges that have ended)', () => {
  let t: TestApp;
  let owner: SignedIn;
  let deviceId: string;
  let deviceToken: string;
  /** Two hours of one record a minute, ending an hour ago, aligned to the hour. */
  const start = Math.floor((Date.now() - 3 * HOUR) / HOUR) * HOUR;
  const end = start + 2 * HOUR;
  const past: HistoryQuery = { from: iso(start), to: iso(end), bucket: '300' };
  const record = (ms: number, voltage: number): TelemetryRecordBody => ({ ts: iso(ms), metrics: { voltage } });

  beforeAll(async () => {
    t = await createTestApp(ADMIN_SETTINGS);
    owner = await aCustomer(t);
    const device = await aClaimedDevice(t, owner);
    deviceId = device.body.deviceId;
    deviceToken = device.registered.accessToken;
    await ingestAll(t.api, deviceToken, Array.from({ length: 120 }, (_, i) => record(start + i * MINUTE + 30_000, 48 + (i % 7) * 0.5)));
  });
  afterAll(async () => {
    await t.close();
  });

  const read = (query: HistoryQuery, who: SignedIn = owner, ifNoneMatch?: string) =>
    history(t.api, { ...who.headers, ...(ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {}) }, deviceId, query);

  it('a bucket answer over an ended range has a strong ETag and must be revalidated; the same question with it is a 304 without a body', async () => {
    const first = await read(past);
    expect(first.response.status).toBe(200);
    const etag = first.response.headers.get('etag');
    expect(etag).toMatch(/^"h-[A-Za-z0-9_-]{43}"$/);
    expect(first.response.headers.get('cache-control')).toBe('private, no-cache');
    expect(first.data!.series[0].points).toHaveLength(24);

    const again = await read(past, owner, etag!);
    expect(again.response.status).toBe(304);
    expect(await again.response.text()).toBe('');
    expect(again.response.headers.get('etag')).toBe(etag);
    // Any of a list, and the weak form, match too (RFC 9110 §13.1.2).
    expect((await read(past, owner, `"other", W/${etag!}`)).response.status).toBe(304);
    // Another tag, or the same question asked differently, is a full answer.
    expect((await read(past, owner, '"h-other"')).response.status).toBe(200);
    const otherBucket = await read({ ...past, bucket: '600' }, owner, etag!);
    expect(otherBucket.response.status).toBe(200);
    expect(otherBucket.response.headers.get('etag')).not.toBe(etag);
  });

  it('a late record inside the range changes the answer and the tag; a record after the range does not', async () => {
    const before = await read(past);
    const etag = before.response.headers.get('etag')!;

    // After the range's end (still in the past): the answer is the same, so is the tag.
    await ingestAll(t.api, deviceToken, [record(end + 10 * MINUTE, 50)]);
    expect((await read(past, owner, etag)).response.status).toBe(304);

    // A late upload from inside the range: a new point in an existing bucket.
    await ingestAll(t.api, deviceToken, [record(start + 5 * MINUTE + 45_000, 60)]);
    const after = await read(past, owner, etag);
    expect(after.response.status).toBe(200);
    const newTag = after.response.headers.get('etag');
    expect(newTag).toMatch(/^"h-/);
    expect(newTag).not.toBe(etag);
    const bucket = after.data!.series[0].points.find((point) => point.ts === iso(start + 5 * MINUTE))!;
    expect(bucket.count).toBe(6);
    expect(bucket.max).toBe(60);
    expect((await read(past, owner, newTag!)).response.status).toBe(304);

    // A retried upload of a record already stored changes nothing.
    expect((await ingest(t.api, deviceToken, [record(start + 5 * MINUTE + 45_000, 60)])).response.status).toBe(200);
    expect((await read(past, owner, newTag!)).response.status).toBe(304);
  });

  it('no ETag for a range still running, nor for raw pages', async () => {
    for (const query of [{ from: iso(start), bucket: '300' }, { from: iso(start), to: iso(Date.now() + HOUR), bucket: '300' }, { ...past, bucket: 'raw' }]) {
      const { response } = await read(query);
      expect(response.status).toBe(200);
      expect(response.headers.get('etag')).toBeNull();
    }
  });

  it("a viewer who may not see the device gets 404 whatever tag they send; an administrator, who sees all of it, gets the owner's tag only if they see the same", async () => {
    const first = await read(past);
    const etag = first.response.headers.get('etag')!;
    const stranger = await aCustomer(t);
    expectProblem(await read(past, stranger, etag), 404, 'NOT_FOUND');

    const admin = await anAdmin(t);
    const asAdmin = await read(past, admin, etag);
    // The device had no earlier owner, so both see every record: the same answer, the same tag.
    expect(asAdmin.response.status).toBe(304);
  });
});
