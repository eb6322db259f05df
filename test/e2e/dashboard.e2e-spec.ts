import { aRegistration, bearer, registerDevice } from '../support/builders.js';
import { ADMIN_SETTINGS, anAdmin, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { aVerifiedCustomer, customerAuth, type SignedInCustomer } from '../support/customers.js';
import { expectProblem, fieldsOf, type Problem } from '../support/problems.js';
import { HOUR, MINUTE, expectSeries, expectedSeries, history, ingestAll, iso, type TelemetryRecordBody } from '../support/telemetry.js';

interface OwnedDevice {
  deviceId: string;
  claimCode: string;
  accessToken: string;
}

type Headers = { authorization: string };

/** The parts of a problem that must not tell one refusal from another (requestId and instance differ per call). */
function comparable(problem: Problem): Omit<Problem, 'requestId' | 'instance'> {
  const { requestId: _requestId, instance: _instance, ...rest } = problem;
  return rest;
}

describe('dashboard', () => {
  let t: TestApp;
  let admin: SignedIn;
  /** Every timestamp of this file is relative to this instant, captured once. */
  const now = Date.now();

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const auth = (customer: SignedInCustomer): Headers => customerAuth(customer.accessToken);

  /** Registers a device and has `owner` claim it through the API (or leaves it unclaimed). */
  async function aDevice(owner?: SignedInCustomer): Promise<OwnedDevice> {
    const body = aRegistration();
    const registered = await registerDevice(t.api, body);
    if (owner) {
      const { response } = await t.api.POST('/api/v1/user/devices/claim', { body: { deviceId: body.deviceId, claimCode: body.claimCode }, headers: auth(owner) });
      expect(response.status).toBe(200);
    }
    return { deviceId: body.deviceId, claimCode: body.claimCode!, accessToken: registered.accessToken };
  }

  function listDevices(headers: Headers | undefined, query: { limit?: number; cursor?: string } = {}) {
    return t.api.GET('/api/v1/dashboard/devices', { params: { query }, headers });
  }

  function getDevice(headers: Headers | undefined, deviceId: string) {
    return t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers });
  }

  /** Follows nextCursor to the end; returns the pages. */
  async function allPages(headers: Headers, limit: number) {
    const pages: Array<{ ids: string[]; nextCursor: string | null }> = [];
    let cursor: string | undefined;
    do {
      const { data, response } = await listDevices(headers, cursor === undefined ? { limit } : { limit, cursor });
      expect(response.status).toBe(200);
      pages.push({ ids: data!.items.map((item) => item.deviceId), nextCursor: data!.nextCursor });
      cursor = data!.nextCursor ?? undefined;
      expect(pages.length).toBeLessThan(1000);
    } while (cursor !== undefined);
    return pages;
  }

  describe('GET /api/v1/dashboard/devices', () => {
    let a: SignedInCustomer;
    let b: SignedInCustomer;
    let aDevices: OwnedDevice[];
    let bDevices: OwnedDevice[];
    let unclaimed: OwnedDevice;

    beforeAll(async () => {
      [a, b] = [await aVerifiedCustomer(t), await aVerifiedCustomer(t)];
      aDevices = [];
      for (let i = 0; i < 7; i++) aDevices.push(await aDevice(a));
      bDevices = [await aDevice(b), await aDevice(b)];
      unclaimed = await aDevice();
    });

    it('a customer sees their own devices only, by deviceId, without the owner member', async () => {
      const { data, response } = await listDevices(auth(a), { limit: 100 });

      expect(response.status).toBe(200);
      expect(data!.items.map((item) => item.deviceId)).toEqual(aDevices.map((device) => device.deviceId).sort());
      expect(data!.nextCursor).toBeNull();
      for (const item of data!.items) {
        expect(item).not.toHaveProperty('owner');
        expect(item).toEqual({
          deviceId: item.deviceId,
          hardwareId: `hw-${item.deviceId}`,
          name: null,
          tags: [],
          firmwareVersion: '0.1.4',
          access: 'owner',
          claimedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          lastSeenAt: null,
          online: false,
          latestMetrics: [],
          config: { desiredVersion: 1, appliedVersion: null, appliedAt: null, status: 'pending' },
        });
      }
      expect((await listDevices(auth(b))).data!.items.map((item) => item.deviceId)).toEqual(bDevices.map((device) => device.deviceId).sort());
    });

    it('a customer without devices gets an empty page', async () => {
      const { data } = await listDevices(auth(await aVerifiedCustomer(t)));

      expect(data).toEqual({ items: [], nextCursor: null });
    });

    it('limit 3 over 7 devices: pages of 3, 3 and 1, no repeats, nextCursor null on the last', async () => {
      const pages = await allPages(auth(a), 3);

      expect(pages.map((page) => page.ids.length)).toEqual([3, 3, 1]);
      expect(pages[0].nextCursor).toEqual(expect.any(String));
      expect(pages[1].nextCursor).toEqual(expect.any(String));
      expect(pages[2].nextCursor).toBeNull();
      const ids = pages.flatMap((page) => page.ids);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toEqual(aDevices.map((device) => device.deviceId).sort());
    });

    it('an administrator sees every device, with owner { userId, email } (null when unclaimed)', async () => {
      const items = new Map<string, unknown>();
      let cursor: string | undefined;
      do {
        const { data } = await listDevices(admin.headers, cursor === undefined ? { limit: 2 } : { limit: 2, cursor });
        for (const item of data!.items) {
          expect(items.has(item.deviceId)).toBe(false);
          items.set(item.deviceId, item.owner);
        }
        cursor = data!.nextCursor ?? undefined;
      } while (cursor !== undefined);

      for (const device of aDevices) expect(items.get(device.deviceId)).toEqual({ userId: a.userId, email: a.email });
      for (const device of bDevices) expect(items.get(device.deviceId)).toEqual({ userId: b.userId, email: b.email });
      expect(items.has(unclaimed.deviceId)).toBe(true);
      expect(items.get(unclaimed.deviceId)).toBeNull();
      const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM devices');
      expect(items.size).toBe(rows[0].n);
    });

    it.each([
      ['limit 0', { limit: 0 }, 'limit'],
      ['limit 101', { limit: 101 }, 'limit'],
      ['limit abc', { limit: 'abc' as unknown as number }, 'limit'],
      ['limit 2.5', { limit: 2.5 }, 'limit'],
      ['a garbage cursor', { cursor: 'not a cursor!' }, 'cursor'],
      ['a cursor that decodes to no deviceId', { cursor: Buffer.from('gw 1 with spaces', 'utf8').toString('base64url') }, 'cursor'],
      // Read as gw-01 before ('Z3ctMDE' is what the service writes; the last character's unused bits differ).
      ['another spelling of a cursor (unused bits set)', { cursor: 'Z3ctMDF' }, 'cursor'],
      ['a cursor of invalid UTF-8', { cursor: Buffer.from([0x67, 0x77, 0xc3, 0x28]).toString('base64url') }, 'cursor'],
    ])('%s: 400 VALIDATION_FAILED naming the field', async (_name, query, field) => {
      const problem = expectProblem(await listDevices(auth(a), query), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
    });

    it('anonymous: 401; a device token: 401', async () => {
      expectProblem(await listDevices(undefined), 401, 'UNAUTHORIZED');
      expectProblem(await listDevices(bearer(aDevices[0].accessToken)), 401, 'UNAUTHORIZED');
    });
  });

  describe('GET /api/v1/dashboard/devices/:deviceId', () => {
    let owner: SignedInCustomer;
    let other: SignedInCustomer;
    let device: OwnedDevice;
    const records: TelemetryRecordBody[] = [
      { ts: iso(now - 3 * MINUTE), metrics: { voltage: 52.1, soc: 80 } },
      { ts: iso(now - 2 * MINUTE), metrics: { voltage: 52.4 } },
      { ts: iso(now - 2 * MINUTE), batteryId: 'pack-2', metrics: { temperature: 24.5 } },
    ];

    beforeAll(async () => {
      [owner, other] = [await aVerifiedCustomer(t), await aVerifiedCustomer(t)];
      device = await aDevice(owner);
      await ingestAll(t.api, device.accessToken, records);
    });

    it('the owner: 200 with the latest value of every metric per battery, online right after an upload, no owner member', async () => {
      const { data, response } = await getDevice(auth(owner), device.deviceId);

      expect(response.status).toBe(200);
      expect(data).not.toHaveProperty('owner');
      expect(data!.online).toBe(true);
      expect(data!.lastSeenAt).toEqual(expect.any(String));
      expect(Date.parse(data!.lastSeenAt!)).toBeGreaterThanOrEqual(now);
      expect([...data!.latestMetrics].sort((x, y) => `${x.batteryId}/${x.metric}`.localeCompare(`${y.batteryId}/${y.metric}`))).toEqual([
        { batteryId: 'main', metric: 'soc', ts: records[0].ts, value: 80 },
        { batteryId: 'main', metric: 'voltage', ts: records[1].ts, value: 52.4 },
        { batteryId: 'pack-2', metric: 'temperature', ts: records[2].ts, value: 24.5 },
      ]);
    });

    it('an administrator: 200 with the owner', async () => {
      const { data, response } = await getDevice(admin.headers, device.deviceId);

      expect(response.status).toBe(200);
      expect(data!.owner).toEqual({ userId: owner.userId, email: owner.email });
      expect(data!.latestMetrics).toHaveLength(3);
    });

    it("another customer: 404 NOT_FOUND, the same answer as for an id that does not exist", async () => {
      const hidden = expectProblem(await getDevice(auth(other), device.deviceId), 404, 'NOT_FOUND');
      const unknown = expectProblem(await getDevice(auth(other), 'gw-does-not-exist'), 404, 'NOT_FOUND');

      expect(comparable(hidden)).toEqual(comparable(unknown));
    });

    it('anonymous: 401; the device\'s own token: 401', async () => {
      expectProblem(await getDevice(undefined, device.deviceId), 401, 'UNAUTHORIZED');
      expectProblem(await getDevice(bearer(device.accessToken), device.deviceId), 401, 'UNAUTHORIZED');
    });

    it('an id of the wrong shape: 400 naming deviceId', async () => {
      expect(fieldsOf(expectProblem(await getDevice(auth(owner), 'gw 1'), 400, 'VALIDATION_FAILED'))).toContain('deviceId');
    });

    it('offline once the last telemetry is 10 minutes old (three 60 s intervals have passed), however recently the gateway was seen', async () => {
      await t.db.query("UPDATE devices SET last_telemetry_at = now() - interval '10 minutes', last_seen_at = now() WHERE device_id = $1", [device.deviceId]);

      const { data } = await getDevice(auth(owner), device.deviceId);
      const listed = (await listDevices(auth(owner))).data!.items.find((item) => item.deviceId === device.deviceId);

      expect(data!.online).toBe(false);
      expect(listed!.online).toBe(false);
    });
  });

  describe('GET /api/v1/dashboard/devices/:deviceId/telemetry/history: who may read it', () => {
    let owner: SignedInCustomer;
    let other: SignedInCustomer;
    let device: OwnedDevice;
    const records: TelemetryRecordBody[] = [
      { ts: iso(now - 30 * MINUTE), metrics: { voltage: 50 } },
      { ts: iso(now - 20 * MINUTE), metrics: { voltage: 51 } },
    ];

    beforeAll(async () => {
      [owner, other] = [await aVerifiedCustomer(t), await aVerifiedCustomer(t)];
      device = await aDevice(owner);
      await ingestAll(t.api, device.accessToken, records);
    });

    const range = { from: iso(now - HOUR), to: iso(now), bucket: 'raw' };

    it.each([
      ['the owner: 200', () => auth(owner), () => device.deviceId, 200, undefined],
      ['an administrator: 200', () => admin.headers, () => device.deviceId, 200, undefined],
      ['another customer: 404', () => auth(other), () => device.deviceId, 404, 'NOT_FOUND'],
      ['anonymous: 401', () => undefined, () => device.deviceId, 401, 'UNAUTHORIZED'],
      ["the device's own token: 401", () => bearer(device.accessToken), () => device.deviceId, 401, 'UNAUTHORIZED'],
      ['the owner asking for an unknown device: 404', () => auth(owner), () => 'gw-does-not-exist', 404, 'NOT_FOUND'],
    ] as Array<[string, () => Headers | undefined, () => string, number, string | undefined]>)('%s', async (_who, headers, deviceId, status, code) => {
      const result = await history(t.api, headers(), deviceId(), range);

      if (code === undefined) {
        expect(result.response.status).toBe(status);
        expect(result.data!.records!.map((record) => record.ts)).toEqual(records.map((record) => record.ts));
      } else {
        expectProblem(result, status, code);
      }
    });

    it('a hidden device answers exactly like an unknown one', async () => {
      const hidden = expectProblem(await history(t.api, auth(other), device.deviceId, range), 404, 'NOT_FOUND');
      const unknown = expectProblem(await history(t.api, auth(other), 'gw-does-not-exist', range), 404, 'NOT_FOUND');

      expect(comparable(hidden)).toEqual(comparable(unknown));
    });
  });

  describe('data isolation after a release: the next owner sees nothing from before it', () => {
    let a: SignedInCustomer;
    let b: SignedInCustomer;
    let device: OwnedDevice;
    let releasedAt: number;
    let aRecords: TelemetryRecordBody[];
    let bRecords: TelemetryRecordBody[];
    let beforeRelease: TelemetryRecordBody;
    let bViewBeforeUpload: Awaited<ReturnType<typeof getDevice>>;
    const window = () => ({ from: iso(now - HOUR), to: iso(now + HOUR) });

    beforeAll(async () => {
      [a, b] = [await aVerifiedCustomer(t), await aVerifiedCustomer(t)];
      device = await aDevice(a);
      // A's time: one record every 30 s from 10 to 4.5 minutes ago, with a metric only A's era has.
      aRecords = Array.from({ length: 12 }, (_, i) => ({ ts: iso(now - 10 * MINUTE + i * 30_000), metrics: { voltage: 40 + i, soc: 50 + i, cellTemp_1: 30 + i } }));
      await ingestAll(t.api, device.accessToken, aRecords);
      const seenByA = await history(t.api, auth(a), device.deviceId, { ...window(), bucket: 'raw' });
      expect(seenByA.data!.records).toHaveLength(12);

      const released = await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: device.deviceId } }, headers: auth(a) });
      expect(released.response.status).toBe(204);
      releasedAt = (await ownedDeviceRow(t.db, device.deviceId))!.last_released_at!.getTime();
      const claimed = await t.api.POST('/api/v1/user/devices/claim', { body: { deviceId: device.deviceId, claimCode: device.claimCode }, headers: auth(b) });
      expect(claimed.response.status).toBe(200);
      bViewBeforeUpload = await getDevice(auth(b), device.deviceId);

      // B's time: from the release to now. A late upload of a reading from just before the release comes with it.
      const bNow = Date.now();
      expect(bNow).toBeGreaterThanOrEqual(releasedAt);
      beforeRelease = { ts: iso(releasedAt - 1), metrics: { voltage: 999, soc: 999 } };
      bRecords = [
        { ts: iso(releasedAt), metrics: { voltage: 60, soc: 70 } },
        { ts: iso(releasedAt + Math.floor((bNow - releasedAt) / 2)), metrics: { voltage: 61, soc: 71 } },
        { ts: iso(bNow), metrics: { voltage: 62, soc: 72 } },
      ];
      if (bRecords[1].ts === bRecords[0].ts || bRecords[1].ts === bRecords[2].ts) bRecords.splice(1, 1);
      await ingestAll(t.api, device.accessToken, [beforeRelease, ...bRecords]);
    });

    it('the new owner, raw: only the records with ts ≥ the release', async () => {
      const { data, response } = await history(t.api, auth(b), device.deviceId, { ...window(), bucket: 'raw' });

      expect(response.status).toBe(200);
      expect(data!.records).toEqual(bRecords.map((record) => ({ ts: record.ts, batteryId: 'main', metrics: record.metrics })));
      expect(data!.nextCursor).toBeNull();
    });

    it.each([60, 300, 3600])('the new owner, bucket %d s: aggregates of the records with ts ≥ the release only', async (bucketSec) => {
      const { data, response } = await history(t.api, auth(b), device.deviceId, { ...window(), bucket: String(bucketSec) });

      expect(response.status).toBe(200);
      expect(data!.bucketSec).toBe(bucketSec);
      expectSeries(data!.series, expectedSeries(bRecords, { from: now - HOUR, to: now + HOUR, bucketSec }));
      expect(data!.series.map((series) => series.metric)).not.toContain('cellTemp_1');
    });

    it('the new owner, a range that ends before the release: no series at all', async () => {
      const { data } = await history(t.api, auth(b), device.deviceId, { from: iso(now - HOUR), to: iso(releasedAt - 1), bucket: '60' });

      expect(data!.series).toEqual([]);
    });

    it('the new owner, right after the claim: no latest metric from before the release', async () => {
      expect(bViewBeforeUpload.response.status).toBe(200);
      expect(bViewBeforeUpload.data!.latestMetrics).toEqual([]);
    });

    it('the new owner, after uploads: latest metrics only from ts ≥ the release', async () => {
      const { data } = await getDevice(auth(b), device.deviceId);

      const last = bRecords[bRecords.length - 1];
      expect([...data!.latestMetrics].sort((x, y) => x.metric.localeCompare(y.metric))).toEqual([
        { batteryId: 'main', metric: 'soc', ts: last.ts, value: last.metrics.soc },
        { batteryId: 'main', metric: 'voltage', ts: last.ts, value: last.metrics.voltage },
      ]);
    });

    it('the former owner no longer sees the device: 404 for the device, its history and absent from the list', async () => {
      expectProblem(await getDevice(auth(a), device.deviceId), 404, 'NOT_FOUND');
      expectProblem(await history(t.api, auth(a), device.deviceId, { ...window(), bucket: 'raw' }), 404, 'NOT_FOUND');
      expect((await listDevices(auth(a))).data!.items).toEqual([]);
    });

    it('an administrator sees everything, both eras', async () => {
      const { data } = await history(t.api, admin.headers, device.deviceId, { ...window(), bucket: 'raw' });
      const all = [...aRecords, beforeRelease, ...bRecords].sort((x, y) => Date.parse(x.ts) - Date.parse(y.ts));

      expect(data!.records).toEqual(all.map((record) => ({ ts: record.ts, batteryId: 'main', metrics: record.metrics })));
      const buckets = await history(t.api, admin.headers, device.deviceId, { ...window(), bucket: '300' });
      expectSeries(buckets.data!.series, expectedSeries(all, { from: now - HOUR, to: now + HOUR, bucketSec: 300 }));
    });
  });
});
