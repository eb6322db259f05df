import type { components } from '@device-cloud/client';
import { bearer } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { randomBytes } from 'node:crypto';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem, fieldsOf } from '../support/problems.js';

type Report = components['schemas']['CrashReportRequest'];
type Headers = { authorization: string };

interface Gateway {
  deviceId: string;
  headers: Headers;
}

async function aGateway(t: TestApp, owner: SignedIn, firmwareVersion = '1.4.2'): Promise<Gateway> {
  const { body, registered } = await aClaimedDevice(t, owner, { firmwareVersion });
  return { deviceId: body.deviceId, headers: bearer(registered.accessToken) };
}

let crashes = 0;
function aPanic(frames: string[], overrides: Partial<Report> = {}): Report {
  crashes++;
  return { crashId: `boot-${crashes}`, ts: new Date(Date.now() - 60_000).toISOString(), firmwareVersion: '1.4.2', resetReason: 'panic', uptimeSec: 3600, panic: { task: 'bms_poll', excCause: 'LoadProhibited', pc: frames[0], backtrace: frames }, ...overrides };
}

function report(t: TestApp, gateway: Gateway, body: Report) {
  return t.api.POST('/api/v1/device/crashes', { body, headers: gateway.headers });
}

const NULL_DEREF = ['0x400D2F1C', '0x400d3a08', '0x4008b2d1', '0x400d1000', '0x400d1100', '0x400d9999'];

describe('crash reports', () => {
  let t: TestApp;
  let owner: SignedIn;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    owner = await aCustomer(t);
    admin = await anAdmin(t);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('stores a report once per crash id, and groups crashes fleet-wide by reset reason and top frames', async () => {
    const [a, b, c] = [await aGateway(t, owner), await aGateway(t, owner), await aGateway(t, owner)];
    const first = aPanic(NULL_DEREF);
    const stored = await report(t, a, first);
    expect(stored.response.status).toBe(201);
    const groupId = stored.data!.groupId;
    expect(groupId).toMatch(/^[0-9a-f]{16}$/);
    // A retry, even one that says something else, is the first report.
    const retried = await report(t, a, { ...first, uptimeSec: 1 });
    expect(retried.response.status).toBe(200);
    expect(retried.data).toEqual({ crashId: first.crashId, groupId });

    // The same top five frames (in any case) with another sixth: the same group; another reason or frame: another.
    expect((await report(t, b, aPanic([...NULL_DEREF.slice(0, 5).map((frame) => frame.toLowerCase()), '0x400d0001'], { firmwareVersion: '1.4.10' }))).data!.groupId).toBe(groupId);
    expect((await report(t, b, aPanic(NULL_DEREF))).data!.groupId).toBe(groupId);
    expect((await report(t, c, aPanic(NULL_DEREF, { resetReason: 'task_wdt' }))).data!.groupId).not.toBe(groupId);
    expect((await report(t, c, aPanic(['0x400e0000']))).data!.groupId).not.toBe(groupId);
    const brownout = await report(t, c, { crashId: 'boot-brownout', ts: new Date().toISOString(), firmwareVersion: '1.4.2', resetReason: 'brownout', uptimeSec: 12 });
    expect(brownout.response.status).toBe(201);
    expect((await t.db.query('SELECT count(*)::int AS n FROM device_crashes WHERE device_id = $1', [a.deviceId])).rows[0].n).toBe(1);

    const groups = await t.api.GET('/api/v1/admin/crash-groups', { headers: admin.headers });
    expect(groups.data!.items[0]).toEqual({
      groupId,
      resetReason: 'panic',
      topFrames: NULL_DEREF.slice(0, 5).map((frame) => frame.toLowerCase()),
      topFunctions: [null, null, null, null, null],
      crash: true,
      devices: 2,
      crashes: 3,
      firstSeen: expect.any(String),
      lastSeen: expect.any(String),
      firmwareVersions: ['1.4.2', '1.4.10'],
    });
    expect(groups.data!.items.find((group) => group.resetReason === 'brownout')).toEqual(expect.objectContaining({ crash: false, devices: 1, crashes: 1, topFrames: [] }));

    const detail = await t.api.GET('/api/v1/admin/crash-groups/{groupId}', { params: { path: { groupId } }, headers: admin.headers });
    expect(detail.data!.samples).toHaveLength(3);
    expect(detail.data!.samples.map((sample) => sample.deviceId).sort()).toEqual([a.deviceId, b.deviceId, b.deviceId].sort());
    expect(detail.data!.samples.find((sample) => sample.crashId === first.crashId)).toEqual(expect.objectContaining({ uptimeSec: 3600, panic: first.panic, groupId }));
    expectProblem(await t.api.GET('/api/v1/admin/crash-groups/{groupId}', { params: { path: { groupId: '0000000000000000' } }, headers: admin.headers }), 404, 'NOT_FOUND');
    expectProblem(await t.api.GET('/api/v1/admin/crash-groups', { headers: owner.headers }), 403, 'FORBIDDEN');
  });

  it('pages the groups', async () => {
    const gateway = await aGateway(t, owner);
    for (let i = 0; i < 3; i++) await report(t, gateway, aPanic([`0x40${i}00000`]));
    const page1 = await t.api.GET('/api/v1/admin/crash-groups', { params: { query: { limit: 2 } }, headers: admin.headers });
    const page2 = await t.api.GET('/api/v1/admin/crash-groups', { params: { query: { limit: 100, cursor: page1.data!.nextCursor! } }, headers: admin.headers });
    const all = await t.api.GET('/api/v1/admin/crash-groups', { params: { query: { limit: 100 } }, headers: admin.headers });
    expect([...page1.data!.items, ...page2.data!.items].map((group) => group.groupId)).toEqual(all.data!.items.map((group) => group.groupId));
    expect(page2.data!.nextCursor).toBeNull();
  });

  it('refuses a backtrace of 10,000 frames, bad reasons, addresses and unknown fields, storing nothing', async () => {
    const gateway = await aGateway(t, owner);
    const frames = Array.from({ length: 10_000 }, (_, i) => `0x${(0x400d0000 + i).toString(16)}`);
    const refusals: Array<[Report, string[]]> = [
      [aPanic(frames), ['panic.backtrace']],
      [aPanic(NULL_DEREF.concat(frames.slice(0, 59))), ['panic.backtrace']],
      [aPanic(['0x400d2f1c', 'main+0x12']), ['panic.backtrace.1']],
      [aPanic(NULL_DEREF, { resetReason: 'meltdown' as never }), ['resetReason']],
      [aPanic(NULL_DEREF, { crashId: 'has space' }), ['crashId']],
      [aPanic(NULL_DEREF, { firmwareVersion: 'v1' }), ['firmwareVersion']],
      [aPanic(NULL_DEREF, { uptimeSec: -1 }), ['uptimeSec']],
      [{ ...aPanic(NULL_DEREF), coreDump: 'AAAA' } as Report, ['coreDump']],
    ];
    for (const [body, fields] of refusals) {
      const problem = expectProblem(await report(t, gateway, body), 400, 'VALIDATION_FAILED');
      expect({ fields: fieldsOf(problem) }).toEqual({ fields });
    }
    expect((await report(t, gateway, aPanic(NULL_DEREF.concat(frames.slice(0, 58))))).response.status).toBe(201);
    expect((await t.db.query('SELECT count(*)::int AS n FROM device_crashes WHERE device_id = $1', [gateway.deviceId])).rows[0].n).toBe(1);
  });

  it('shows a device\'s reports, newest first, to whoever sees the device', async () => {
    const gateway = await aGateway(t, owner);
    const reports = [aPanic(NULL_DEREF, { ts: new Date(Date.now() - 3000).toISOString() }), aPanic(['0x400e0000'], { ts: new Date(Date.now() - 2000).toISOString() }), aPanic(NULL_DEREF, { ts: new Date(Date.now() - 1000).toISOString() })];
    for (const body of reports) await report(t, gateway, body);
    const list = (query: { limit?: number; cursor?: string }, who = owner.headers) => t.api.GET('/api/v1/dashboard/devices/{deviceId}/crashes', { params: { path: { deviceId: gateway.deviceId }, query }, headers: who });
    const page1 = await list({ limit: 2 });
    expect(page1.data!.items.map((item) => item.crashId)).toEqual([reports[2].crashId, reports[1].crashId]);
    const page2 = await list({ limit: 2, cursor: page1.data!.nextCursor! });
    expect(page2.data).toEqual({ items: [expect.objectContaining({ crashId: reports[0].crashId, deviceId: gateway.deviceId, resetReason: 'panic' })], nextCursor: null });
    expectProblem(await list({}, (await aCustomer(t)).headers), 404, 'NOT_FOUND');
    expect((await list({}, admin.headers)).data!.items).toHaveLength(3);
  });

  it('names the functions of backtraces once the release has a symbol map', async () => {
    const { data: release } = await t.api.POST('/api/v1/admin/firmware', {
      body: { version: '2.0.1', url: 'https://fw.example.com/2.0.1.bin', sha256: randomBytes(32).toString('hex'), size: 4096 },
      headers: admin.headers,
    });
    const gateway = await aGateway(t, owner, '2.0.1');
    const frames = ['0x400d2f1c', '0x400d3a08', '0x4008b2d1', '0x500d0000'];
    const reported = await report(t, gateway, aPanic(frames, { firmwareVersion: '2.0.1' }));
    const list = async () => (await t.api.GET('/api/v1/dashboard/devices/{deviceId}/crashes', { params: { path: { deviceId: gateway.deviceId } }, headers: owner.headers })).data!.items[0];
    expect((await list()).frames).toEqual(frames.map((address) => ({ address, function: null })));

    // What `xtensa-esp32-elf-nm -S -n app.elf` prints: data and size-less symbols are skipped.
    const nm = ['00000000 A _stext', '3ffb0000 00000100 D some_buffer', '400d2f00 00000080 T bms_poll_task', '400d3a00 00000040 t read_cell_voltages', '4008b200 00000100 W esp_panic_handler', '4008c000 U undefined_symbol'].join('\n');
    const symbols = { path: { id: release!.id } };
    expectProblem(await t.api.PUT('/api/v1/admin/firmware/{id}/symbols', { params: symbols, body: { text: nm }, headers: owner.headers }), 403, 'FORBIDDEN');
    expectProblem(await t.api.PUT('/api/v1/admin/firmware/{id}/symbols', { params: symbols, body: { text: 'not a symbol map' }, headers: admin.headers }), 400, 'VALIDATION_FAILED');
    expectProblem(await t.api.PUT('/api/v1/admin/firmware/{id}/symbols', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } }, body: { text: nm }, headers: admin.headers }), 404, 'NOT_FOUND');
    const stored = await t.api.PUT('/api/v1/admin/firmware/{id}/symbols', { params: symbols, body: { text: nm }, headers: admin.headers });
    expect(stored.data).toEqual({ releaseId: release!.id, symbols: 3 });

    expect((await list()).frames).toEqual([
      { address: '0x400d2f1c', function: 'bms_poll_task' },
      { address: '0x400d3a08', function: 'read_cell_voltages' },
      { address: '0x4008b2d1', function: 'esp_panic_handler' },
      { address: '0x500d0000', function: null },
    ]);
    const group = await t.api.GET('/api/v1/admin/crash-groups/{groupId}', { params: { path: { groupId: reported.data!.groupId } }, headers: admin.headers });
    expect(group.data!.topFunctions).toEqual(['bms_poll_task', 'read_cell_voltages', 'esp_panic_handler', null]);

    // A new map replaces the old one, on this instance's cache too.
    await t.api.PUT('/api/v1/admin/firmware/{id}/symbols', { params: symbols, body: { text: '400d2f00 00000080 T renamed_task' }, headers: admin.headers });
    expect((await list()).frames[0]).toEqual({ address: '0x400d2f1c', function: 'renamed_task' });
  });
});
