import type { paths } from '@device-cloud/client';
import { aRegistration, registerDevice } from '../support/builders.js';
import { ADMIN_SETTINGS, aCustomer, anAdmin, claim, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem, fieldsOf, type Problem } from '../support/problems.js';
import { ingestAll } from '../support/telemetry.js';

type ListQuery = NonNullable<paths['/api/v1/dashboard/devices']['get']['parameters']['query']>;
type LabelsBody = NonNullable<paths['/api/v1/dashboard/devices/{deviceId}']['patch']['requestBody']>['content']['application/json'];
type Who = { headers: { authorization: string } };

interface Device {
  deviceId: string;
  claimCode: string;
  accessToken: string;
}

/** The parts of a problem that must not tell one refusal from another (requestId and instance differ per call). */
function comparable(problem: Problem): Omit<Problem, 'requestId' | 'instance'> {
  const { requestId: _requestId, instance: _instance, ...rest } = problem;
  return rest;
}

describe('device names, tags and fleet filters', () => {
  let t: TestApp;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  /** Registers a device (firmware 0.1.4 unless given) and has `owner` claim it, or leaves it unclaimed. */
  async function aDevice(owner?: SignedIn, firmwareVersion = '0.1.4'): Promise<Device> {
    const body = aRegistration({ firmwareVersion });
    const registered = await registerDevice(t.api, body);
    if (owner) expect((await claim(t, owner, { deviceId: body.deviceId, claimCode: body.claimCode })).response.status).toBe(200);
    return { deviceId: body.deviceId, claimCode: body.claimCode!, accessToken: registered.accessToken };
  }

  function relabel(who: Who | undefined, deviceId: string, body: LabelsBody) {
    return t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body, headers: who?.headers });
  }

  function list(who: Who, query: ListQuery = {}) {
    return t.api.GET('/api/v1/dashboard/devices', { params: { query }, headers: who.headers });
  }

  async function labelsRow(deviceId: string): Promise<{ name: string | null; tags: string[] }> {
    const { rows } = await t.db.query<{ name: string | null; tags: string[] }>('SELECT name, tags FROM devices WHERE device_id = $1', [deviceId]);
    return rows[0];
  }

  /** Follows nextCursor with the same filters to the end; fails on a device listed twice. */
  async function allMatching(who: Who, query: ListQuery, limit = 2): Promise<Array<{ deviceId: string; online: boolean }>> {
    const items: Array<{ deviceId: string; online: boolean }> = [];
    let cursor: string | undefined;
    do {
      const { data, response } = await list(who, { ...query, limit, ...(cursor === undefined ? {} : { cursor }) });
      expect(response.status).toBe(200);
      expect(data!.items.length).toBeLessThanOrEqual(limit);
      items.push(...data!.items.map((item) => ({ deviceId: item.deviceId, online: item.online })));
      cursor = data!.nextCursor ?? undefined;
      expect(items.length).toBeLessThan(1000);
    } while (cursor !== undefined);
    const ids = items.map((item) => item.deviceId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort());
    return items;
  }

  const idsOf = (items: Array<{ deviceId: string }>) => items.map((item) => item.deviceId);
  const sorted = (...devices: Device[]) => devices.map((device) => device.deviceId).sort();

  describe('PATCH /api/v1/dashboard/devices/:deviceId', () => {
    let owner: SignedIn;
    let stranger: SignedIn;

    beforeAll(async () => {
      [owner, stranger] = [await aCustomer(t), await aCustomer(t)];
    });

    it('the owner names and tags a device: trimmed, lower-cased, repeats once, sorted; answered as GET answers it', async () => {
      const device = await aDevice(owner);

      const { data, response } = await relabel(owner, device.deviceId, { name: '  Shed battery  ', tags: ['Left', 'north-2', 'left', ' spare '] });

      expect(response.status).toBe(200);
      expect(data).toEqual(expect.objectContaining({ deviceId: device.deviceId, name: 'Shed battery', tags: ['left', 'north-2', 'spare'] }));
      const got = await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: device.deviceId } }, headers: owner.headers });
      expect(got.data).toEqual(data);
      expect(await labelsRow(device.deviceId)).toEqual({ name: 'Shed battery', tags: ['left', 'north-2', 'spare'] });
      const listed = await list(owner);
      expect(listed.data!.items.find((item) => item.deviceId === device.deviceId)).toEqual(data);
    });

    it('a key left out stays; tags replaces the set; null clears the name and [] the tags', async () => {
      const device = await aDevice(owner);
      await relabel(owner, device.deviceId, { name: 'Shed', tags: ['left', 'spare'] });

      expect((await relabel(owner, device.deviceId, { tags: ['north-2'] })).data).toEqual(expect.objectContaining({ name: 'Shed', tags: ['north-2'] }));
      expect((await relabel(owner, device.deviceId, { name: 'Barn' })).data).toEqual(expect.objectContaining({ name: 'Barn', tags: ['north-2'] }));
      expect((await relabel(owner, device.deviceId, { name: null })).data).toEqual(expect.objectContaining({ name: null, tags: ['north-2'] }));
      expect((await relabel(owner, device.deviceId, { tags: [] })).data).toEqual(expect.objectContaining({ name: null, tags: [] }));
      expect(await labelsRow(device.deviceId)).toEqual({ name: null, tags: [] });
    });

    it('a name is 64 characters, not 64 UTF-16 units: 64 emoji fit, 65 do not', async () => {
      const device = await aDevice(owner);

      expect((await relabel(owner, device.deviceId, { name: '🔋'.repeat(64) })).data?.name).toBe('🔋'.repeat(64));
      expectProblem(await relabel(owner, device.deviceId, { name: '🔋'.repeat(65) }), 400, 'VALIDATION_FAILED');
      expect((await labelsRow(device.deviceId)).name).toBe('🔋'.repeat(64));
    });

    it('another customer gets the 404 of an unknown device, and nothing changes', async () => {
      const device = await aDevice(owner);
      await relabel(owner, device.deviceId, { name: 'Shed', tags: ['left'] });

      const refused = expectProblem(await relabel(stranger, device.deviceId, { name: 'Mine now', tags: ['stolen'] }), 404, 'NOT_FOUND');
      const unknown = expectProblem(await relabel(stranger, 'gw-does-not-exist', { name: 'Mine now' }), 404, 'NOT_FOUND');

      expect(comparable(refused)).toEqual(comparable(unknown));
      expect(await labelsRow(device.deviceId)).toEqual({ name: 'Shed', tags: ['left'] });
    });

    it('an unclaimed device: 404 for customers; an administrator names any device', async () => {
      const unclaimed = await aDevice();
      const owned = await aDevice(owner);

      expectProblem(await relabel(stranger, unclaimed.deviceId, { name: 'Mine' }), 404, 'NOT_FOUND');
      expect((await relabel(admin, unclaimed.deviceId, { name: 'Spare unit', tags: ['stock'] })).data).toEqual(expect.objectContaining({ name: 'Spare unit', tags: ['stock'], owner: null }));
      expect((await relabel(admin, owned.deviceId, { tags: ['support'] })).data).toEqual(expect.objectContaining({ tags: ['support'], owner: { userId: owner.userId, email: owner.email } }));
      expect(await labelsRow(owned.deviceId)).toEqual({ name: null, tags: ['support'] });
    });

    it('without a token: 401', async () => {
      const device = await aDevice(owner);

      expectProblem(await relabel(undefined, device.deviceId, { name: 'Shed' }), 401, 'UNAUTHORIZED');
    });

    const tooMany = Array.from({ length: 21 }, (_, i) => `tag-${i}`);
    it.each<[string, unknown, string[]]>([
      ['an empty body', {}, ['(root)']],
      ['an empty name', { name: '' }, ['name']],
      ['a name of spaces', { name: '   ' }, ['name']],
      ['a name of 65 characters', { name: 'x'.repeat(65) }, ['name']],
      ['a name with a line break', { name: 'Shed\nbattery' }, ['name']],
      ['a name with a tab', { name: 'Shed\tbattery' }, ['name']],
      ['a name with a right-to-left override', { name: 'Shed \u202Eyrettab' }, ['name']],
      ['a name that is a number', { name: 42 }, ['name']],
      ['tags that are a string', { tags: 'left' }, ['tags']],
      ['tags that are null', { tags: null }, ['tags']],
      ['a tag with a space inside', { tags: ['left side'] }, ['tags']],
      ['a tag with a letter beyond a–z', { tags: ['süd'] }, ['tags']],
      ['a tag of 33 characters', { tags: ['x'.repeat(33)] }, ['tags']],
      ['an empty tag', { tags: [''] }, ['tags']],
      ['a tag that is a number', { tags: [7] }, ['tags']],
      ['21 distinct tags', { tags: tooMany }, ['tags']],
      ['a good name with a bad tag', { name: 'Fine name', tags: ['bad tag'] }, ['tags']],
      ['an unknown key', { name: 'Fine name', colour: 'red' }, ['colour']],
    ])('%s: 400 naming the field, and nothing changes', async (_case, body, fields) => {
      const device = await aDevice(owner);
      await relabel(owner, device.deviceId, { name: 'Before', tags: ['left'] });

      const problem = expectProblem(await relabel(owner, device.deviceId, body as LabelsBody), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toEqual(expect.arrayContaining(fields));
      expect(await labelsRow(device.deviceId)).toEqual({ name: 'Before', tags: ['left'] });
    });

    it('20 distinct tags are allowed; repeats do not count against the limit', async () => {
      const device = await aDevice(owner);
      const twenty = Array.from({ length: 20 }, (_, i) => `tag-${String(i).padStart(2, '0')}`);

      const { data, response } = await relabel(owner, device.deviceId, { tags: [...twenty, ...twenty.map((tag) => tag.toUpperCase())] });

      expect(response.status).toBe(200);
      expect(data!.tags).toEqual(twenty);
    });

    it('a release clears the name and tags: the next owner starts without them', async () => {
      const device = await aDevice(owner);
      await relabel(owner, device.deviceId, { name: 'Shed', tags: ['left'] });

      const released = await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: device.deviceId } }, headers: owner.headers });
      expect(released.response.status).toBe(204);
      expect(await labelsRow(device.deviceId)).toEqual({ name: null, tags: [] });
      expect((await claim(t, stranger, { deviceId: device.deviceId, claimCode: device.claimCode })).response.status).toBe(200);
      const got = await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: device.deviceId } }, headers: stranger.headers });
      expect(got.data).toEqual(expect.objectContaining({ name: null, tags: [] }));
    });
  });

  describe('GET /api/v1/dashboard/devices with filters', () => {
    let fleet: SignedIn;
    let other: SignedIn;
    /** Fleet devices: see beforeAll for what each one is. */
    let d1: Device, d2: Device, d3: Device, d4: Device, d5: Device, resold: Device;
    let o1: Device;
    let unclaimed: Device;
    const now = Date.now();

    /** Stores the readings through the API, then sets when they arrived, its last telemetry and contact (a fixture shortcut: the service's clock is real). */
    async function reported(device: Device, soc: Record<string, number>, seenSecondsAgo: number): Promise<void> {
      await ingestAll(
        t.api,
        device.accessToken,
        Object.entries(soc).map(([batteryId, value]) => ({ ts: new Date(now - 30_000).toISOString(), batteryId, metrics: { soc: value, voltage: 52 } })),
      );
      await t.db.query('UPDATE devices SET last_seen_at = $2, last_telemetry_at = $2 WHERE device_id = $1', [device.deviceId, new Date(Date.now() - seenSecondsAgo * 1000)]);
    }

    async function ownInterval(owner: SignedIn, device: Device, telemetryIntervalSec: number): Promise<void> {
      const { response } = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId: device.deviceId } }, body: { telemetryIntervalSec }, headers: owner.headers });
      expect(response.status).toBe(200);
    }

    beforeAll(async () => {
      [fleet, other] = [await aCustomer(t), await aCustomer(t)];
      // Seen 60 s ago with the 60 s default (online up to 180 s); two batteries, one low.
      d1 = await aDevice(fleet);
      await relabel(fleet, d1.deviceId, { name: 'Garage Battery', tags: ['roof', 'site-7'] });
      await reported(d1, { main: 15, aux: 80 }, 60);
      // Seen 200 s ago with the default: offline.
      d2 = await aDevice(fleet, '0.2.0');
      await relabel(fleet, d2.deviceId, { name: 'Cellar', tags: ['site-7'] });
      await reported(d2, { main: 50 }, 200);
      // Seen 200 s ago, but reports every 300 s (online up to 900 s); the second battery is low.
      d3 = await aDevice(fleet);
      await relabel(fleet, d3.deviceId, { tags: ['roof'] });
      await ownInterval(fleet, d3, 300);
      await reported(d3, { main: 90, aux: 10 }, 200);
      // Never seen, no readings; a name full of LIKE's special characters.
      d4 = await aDevice(fleet);
      await relabel(fleet, d4.deviceId, { name: '100%_off\\' });
      // Seen 1000 s ago with a 300 s interval: offline.
      d5 = await aDevice(fleet, '0.2.0');
      await relabel(fleet, d5.deviceId, { name: 'garage door', tags: ['roof', 'site-7', 'spare'] });
      await ownInterval(fleet, d5, 300);
      await reported(d5, { main: 19.99 }, 1000);
      // Low before its previous owner released it; the fleet owner claimed it after and sees no reading of it.
      resold = await aDevice(other);
      await reported(resold, { main: 5 }, 60);
      expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: resold.deviceId } }, headers: other.headers })).response.status).toBe(204);
      expect((await claim(t, fleet, { deviceId: resold.deviceId, claimCode: resold.claimCode })).response.status).toBe(200);
      await relabel(fleet, resold.deviceId, { name: 'Resold', tags: ['second-hand'] });

      // Another customer's device that meets every filter the fleet owner's tests use.
      o1 = await aDevice(other);
      await relabel(other, o1.deviceId, { name: 'Garage Battery %_\\', tags: ['roof', 'site-7', 'spare', 'second-hand'] });
      await reported(o1, { main: 5 }, 30);
      unclaimed = await aDevice();
      await relabel(admin, unclaimed.deviceId, { name: 'Garage spare', tags: ['roof'] });
    });

    const fleetAll = () => sorted(d1, d2, d3, d4, d5, resold);

    it('no filter: every device of the owner, their names and tags shown', async () => {
      const { data } = await list(fleet, { limit: 100 });

      expect(idsOf(data!.items)).toEqual(fleetAll());
      expect(data!.items.find((item) => item.deviceId === d1.deviceId)).toEqual(expect.objectContaining({ name: 'Garage Battery', tags: ['roof', 'site-7'] }));
      expect(data!.items.find((item) => item.deviceId === d3.deviceId)).toEqual(expect.objectContaining({ name: null, tags: ['roof'] }));
    });

    describe('q: case-insensitive substring of the name or the device id', () => {
      it('of names', async () => {
        expect(idsOf(await allMatching(fleet, { q: 'garage' }))).toEqual(sorted(d1, d5));
        expect(idsOf(await allMatching(fleet, { q: 'BATTERY' }))).toEqual(sorted(d1));
        expect(idsOf(await allMatching(fleet, { q: '  cellar ' }))).toEqual(sorted(d2));
      });

      it('of device ids, in any case', async () => {
        const suffix = d2.deviceId.slice(-6).toUpperCase();

        expect(idsOf(await allMatching(fleet, { q: suffix }))).toEqual(sorted(d2));
      });

      it.each([['%'], ['_'], ['\\'], ['%_off\\']])('%s matches only itself, not as a LIKE wildcard or escape', async (q) => {
        expect(idsOf(await allMatching(fleet, { q }))).toEqual(sorted(d4));
      });

      it('nothing matching: an empty page', async () => {
        expect(await list(fleet, { q: 'no such name' }).then((result) => result.data)).toEqual({ items: [], nextCursor: null });
      });
    });

    describe('tag: devices having every tag given', () => {
      it('one tag', async () => {
        expect(idsOf(await allMatching(fleet, { tag: ['roof'] }))).toEqual(sorted(d1, d3, d5));
      });

      it('repeated, comma-separated, or in upper case: the same', async () => {
        const both = sorted(d1, d5);

        expect(idsOf(await allMatching(fleet, { tag: ['roof', 'site-7'] }))).toEqual(both);
        expect(idsOf(await allMatching(fleet, { tag: ['roof,site-7'] }))).toEqual(both);
        expect(idsOf(await allMatching(fleet, { tag: ['ROOF', 'Site-7'] }))).toEqual(both);
        expect(idsOf(await allMatching(fleet, { tag: ['roof', 'site-7', 'spare'] }))).toEqual(sorted(d5));
      });

      it('a tag nobody has: an empty page', async () => {
        expect(idsOf(await allMatching(fleet, { tag: ['attic'] }))).toEqual([]);
      });
    });

    describe('online: the rule of the online field, with each device\'s own telemetry interval', () => {
      it.each([[true], [false]])('online=%s lists exactly the devices whose online field says so', async (online) => {
        const matching = await allMatching(fleet, { online });
        const everything = (await list(fleet, { limit: 100 })).data!.items;

        expect(matching.every((item) => item.online === online)).toBe(true);
        expect(idsOf(matching)).toEqual(idsOf(everything.filter((item) => item.online === online)));
        expect(idsOf(matching)).toEqual(online ? sorted(d1, d3, resold) : sorted(d2, d4, d5));
      });
    });

    describe('firmwareVersion: exactly the version reported', () => {
      it('lists the devices on it', async () => {
        expect(idsOf(await allMatching(fleet, { firmwareVersion: '0.2.0' }))).toEqual(sorted(d2, d5));
        expect(idsOf(await allMatching(fleet, { firmwareVersion: '0.1.4' }))).toEqual(sorted(d1, d3, d4, resold));
      });

      it('0.2.0.0 is another text: no device', async () => {
        expect(idsOf(await allMatching(fleet, { firmwareVersion: '0.2.0.0' }))).toEqual([]);
      });
    });

    describe('socBelow: the latest soc of any battery below the value', () => {
      it('any battery counts: the low second battery of a device lists it', async () => {
        expect(idsOf(await allMatching(fleet, { socBelow: 20 }))).toEqual(sorted(d1, d3, d5));
      });

      it('strictly below', async () => {
        expect(idsOf(await allMatching(fleet, { socBelow: 15 }))).toEqual(sorted(d3));
        expect(idsOf(await allMatching(fleet, { socBelow: 15.5 }))).toEqual(sorted(d1, d3));
        expect(idsOf(await allMatching(fleet, { socBelow: 10 }))).toEqual([]);
      });

      it('readings from before the owner\'s claim do not count, as they are not shown either', async () => {
        const { data } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: resold.deviceId } }, headers: fleet.headers });
        expect(data!.latestMetrics).toEqual([]);

        expect(idsOf(await allMatching(fleet, { socBelow: 100 }))).not.toContain(resold.deviceId);
        expect(idsOf(await allMatching(admin, { socBelow: 6 }))).toEqual(sorted(resold, o1));
      });
    });

    it.each<[string, ListQuery, () => string[]]>([
      ['tag and online', { tag: ['roof'], online: true }, () => sorted(d1, d3)],
      ['tag, socBelow and firmwareVersion', { tag: ['site-7'], socBelow: 20, firmwareVersion: '0.2.0' }, () => sorted(d5)],
      ['q and online=false', { q: 'garage', online: false }, () => sorted(d5)],
      ['every filter', { q: 'GARAGE', tag: ['roof', 'site-7'], online: true, firmwareVersion: '0.1.4', socBelow: 16 }, () => sorted(d1)],
      ['filters no device meets together', { tag: ['spare'], online: true }, () => []],
    ])('combined: %s', async (_case, query, expected) => {
      expect(idsOf(await allMatching(fleet, query))).toEqual(expected());
    });

    it.each<[string, ListQuery]>([
      ['tag=roof', { tag: ['roof'] }],
      ['socBelow=20', { socBelow: 20 }],
      ['online=true', { online: true }],
      ['q=garage', { q: 'garage' }],
    ])('paging with %s, limit 1 and 2: each matching device exactly once, in order, the same as one page', async (_case, query) => {
      const whole = idsOf((await list(fleet, { ...query, limit: 100 })).data!.items);
      expect(whole.length).toBeGreaterThan(1);

      expect(idsOf(await allMatching(fleet, query, 1))).toEqual(whole);
      expect(idsOf(await allMatching(fleet, query, 2))).toEqual(whole);
    });

    it('a page of two, then the next page with the same filters: the rest, then the end', async () => {
      const first = await list(fleet, { tag: ['roof'], limit: 2 });
      expect(idsOf(first.data!.items)).toEqual(sorted(d1, d3, d5).slice(0, 2));
      expect(first.data!.nextCursor).toEqual(expect.any(String));

      const second = await list(fleet, { tag: ['roof'], limit: 2, cursor: first.data!.nextCursor! });
      expect(idsOf(second.data!.items)).toEqual(sorted(d1, d3, d5).slice(2));
      expect(second.data!.nextCursor).toBeNull();
    });

    describe('an administrator: the whole fleet, with the same filters', () => {
      it('tag, q and firmwareVersion across every owner and unclaimed devices', async () => {
        expect(idsOf(await allMatching(admin, { tag: ['roof'] }))).toEqual(sorted(d1, d3, d5, o1, unclaimed));
        expect(idsOf(await allMatching(admin, { q: 'garage' }))).toEqual(sorted(d1, d5, o1, unclaimed));
        expect(idsOf(await allMatching(admin, { tag: ['second-hand'], firmwareVersion: '0.1.4' }))).toEqual(sorted(resold, o1));
      });

      it.each([[true], [false]])('online=%s agrees with the online field of every device', async (online) => {
        const matching = await allMatching(admin, { online }, 3);
        const everything = await allMatching(admin, {}, 100);

        expect(matching.every((item) => item.online === online)).toBe(true);
        expect(idsOf(matching)).toEqual(idsOf(everything.filter((item) => item.online === online)));
        expect(idsOf(matching)).toEqual(expect.arrayContaining(online ? sorted(d1, d3, o1) : sorted(d2, d4, d5, unclaimed)));
      });
    });

    it.each<[string, ListQuery]>([
      ['no filter', {}],
      ['tag=roof', { tag: ['roof'] }],
      ['tag=second-hand', { tag: ['second-hand'] }],
      ['q=garage', { q: 'garage' }],
      ['q=%', { q: '%' }],
      ['online=true', { online: true }],
      ['socBelow=100', { socBelow: 100 }],
      ['firmwareVersion=0.1.4', { firmwareVersion: '0.1.4' }],
      ['every filter o1 meets', { q: 'garage', tag: ['roof', 'spare'], online: true, socBelow: 6, firmwareVersion: '0.1.4' }],
    ])('a customer never sees another customer\'s devices: %s', async (_case, query) => {
      const ids = idsOf(await allMatching(fleet, query));

      expect(ids.every((id) => fleetAll().includes(id))).toBe(true);
      expect(ids).not.toContain(o1.deviceId);
      expect(ids).not.toContain(unclaimed.deviceId);
    });

    it.each<[string, string, Record<string, unknown>]>([
      ['an empty q', 'q', { q: '' }],
      ['a q of spaces', 'q', { q: '   ' }],
      ['a q of 65 characters', 'q', { q: 'x'.repeat(65) }],
      ['an empty tag', 'tag', { tag: [''] }],
      ['a tag with a space', 'tag', { tag: ['left side'] }],
      ['a comma-separated tag with an empty part', 'tag', { tag: ['roof,,spare'] }],
      ['21 tags', 'tag', { tag: Array.from({ length: 21 }, (_, i) => `t${i}`) }],
      ['online=yes', 'online', { online: 'yes' }],
      ['online=1', 'online', { online: '1' }],
      ['firmwareVersion=latest', 'firmwareVersion', { firmwareVersion: 'latest' }],
      ['socBelow=abc', 'socBelow', { socBelow: 'abc' }],
      ['socBelow empty', 'socBelow', { socBelow: '' }],
      ['socBelow=-1', 'socBelow', { socBelow: -1 }],
      ['socBelow=101', 'socBelow', { socBelow: 101 }],
      ['socBelow=1e1', 'socBelow', { socBelow: '1e1' }],
      ['an unknown filter', 'owner', { owner: 'someone' }],
    ])('%s: 400 naming %s', async (_case, field, query) => {
      const problem = expectProblem(await list(fleet, query as ListQuery), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
    });
  });
});
