import { randomBytes } from 'node:crypto';
import type { components } from '@device-cloud/client';
import { aDeviceId, aRegistration, bearer, registerDevice } from '../support/builders.js';
import { ADMIN_SETTINGS, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';

type CrashReport = components['schemas']['CrashReportRequest'];

const HOUR = 3600_000;

interface Gateway {
  deviceId: string;
  headers: { authorization: string };
}

/**
 * Release health: a release's status gives the crash-free share of the devices that confirmed
 * booting it (no crash report of it in the day after boot_confirmed), next to its failure share;
 * a release with minCrashFreePercent pauses itself below it, as it does over its failure budget.
 */
describe('release health', () => {
  let t: TestApp;
  let admin: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
  });

  afterAll(async () => {
    await t?.close();
  });

  async function publish(hardwareId: string, minCrashFreePercent?: number) {
    const body = { version: '1.5.0', hardwareId, url: 'https://fw.example.com/1.5.0.bin', sha256: randomBytes(32).toString('hex'), size: 4096, ...(minCrashFreePercent === undefined ? {} : { minCrashFreePercent }) };
    const { data, response } = await t.api.POST('/api/v1/admin/firmware', { body, headers: admin.headers });
    if (response.status !== 201 || !data) throw new Error(`publish answered ${response.status}`);
    return data;
  }

  async function status(id: string) {
    const { data, response } = await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id } }, headers: admin.headers });
    if (response.status !== 200 || !data) throw new Error(`status answered ${response.status}`);
    return data;
  }

  /** `count` gateways on 1.4.0 that were offered 1.5.0, installed it and confirmed booting it an hour ago (gateway time). */
  async function confirmedGateways(hardwareId: string, count: number): Promise<Gateway[]> {
    const gateways: Gateway[] = [];
    for (let i = 0; i < count; i++) {
      const body = aRegistration({ hardwareId, deviceId: aDeviceId('fleet'), firmwareVersion: '1.4.0' });
      const gateway = { deviceId: body.deviceId, headers: bearer((await registerDevice(t.api, body)).accessToken) };
      expect((await t.api.GET('/api/v1/ota/latest', { headers: gateway.headers })).data!.firmware?.version).toBe('1.5.0');
      const at = Date.now() - HOUR;
      const events = [
        { ts: new Date(at - 60_000).toISOString(), type: 'install_succeeded' as const, fromVersion: '1.4.0', toVersion: '1.5.0' },
        { ts: new Date(at).toISOString(), type: 'boot_confirmed' as const, fromVersion: '1.4.0', toVersion: '1.5.0' },
      ];
      expect((await t.api.POST('/api/v1/ota/events', { body: { events }, headers: gateway.headers })).response.status).toBe(200);
      gateways.push(gateway);
    }
    return gateways;
  }

  let crashes = 0;
  async function crash(gateway: Gateway, overrides: Partial<CrashReport> = {}): Promise<void> {
    crashes++;
    const body: CrashReport = { crashId: `c-${crashes}`, ts: new Date(Date.now() - HOUR / 2).toISOString(), firmwareVersion: '1.5.0', resetReason: 'panic', uptimeSec: 1800, panic: { backtrace: ['0x400d2f1c'] }, ...overrides };
    expect((await t.api.POST('/api/v1/device/crashes', { body, headers: gateway.headers })).response.status).toBe(201);
  }

  it('counts the devices that crashed on the release within a day of confirming it, and nothing else', async () => {
    const hardwareId = `hw-${randomBytes(4).toString('hex')}`;
    const release = await publish(hardwareId);
    const gateways = await confirmedGateways(hardwareId, 4);
    expect((await status(release.id)).health).toEqual({ bootConfirmed: 4, crashed: 0, crashFreePercent: 100, failurePercent: 0 });

    await crash(gateways[0]);
    await crash(gateways[0]); // one device, counted once
    await crash(gateways[1], { resetReason: 'brownout', panic: undefined }); // a reboot reason, not a crash
    await crash(gateways[2], { firmwareVersion: '1.4.0' }); // the old firmware's crash
    await crash(gateways[3], { ts: new Date(Date.now() - 2 * HOUR).toISOString() }); // before it confirmed 1.5.0
    expect((await status(release.id)).health).toEqual({ bootConfirmed: 4, crashed: 1, crashFreePercent: 75, failurePercent: 0 });
  });

  it('pauses a release below minCrashFreePercent among at least 10 confirmed devices, and says why', async () => {
    const hardwareId = `hw-${randomBytes(4).toString('hex')}`;
    const release = await publish(hardwareId, 90);
    expect(release.minCrashFreePercent).toBe(90);
    const gateways = await confirmedGateways(hardwareId, 10);
    await crash(gateways[0]);
    // 9 of 10 crash-free: 90 %, not below the target.
    const atTarget = await status(release.id);
    expect(atTarget.health).toEqual(expect.objectContaining({ bootConfirmed: 10, crashed: 1, crashFreePercent: 90 }));
    expect(atTarget.autoPaused).toBe(false);

    await crash(gateways[1], { resetReason: 'task_wdt', panic: undefined });
    const below = await status(release.id);
    expect(below.health.crashFreePercent).toBe(80);
    expect(below.autoPaused).toBe(true);
    expect(below.release.paused).toBe(true);
    const { rows } = await t.db.query<{ data: Record<string, unknown> }>("SELECT data FROM device_events WHERE type = 'ota.release_paused' AND device_id = $1", [gateways[5].deviceId]);
    expect(rows).toEqual([{ data: { releaseId: release.id, version: '1.5.0', hardwareId, channel: 'stable', reason: 'crashes', maxFailurePercent: null, minCrashFreePercent: 90 } }]);
  });
});
