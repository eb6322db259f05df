import { randomBytes } from 'node:crypto';
import type { components } from '@device-cloud/client';
import { bearer, registerDevice, type Registered } from '../support/builders.js';
import { aClaimedDevice, aCustomer, anAdmin, ADMIN_SETTINGS, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problems.js';

type PublishBody = components['schemas']['PublishFirmwareRequest'];
type Release = components['schemas']['FirmwareReleaseResponse'];

const HOUR = 3_600_000;

/**
 * Firmware campaigns: releases for the devices with a tag, for a list of devices, from a given
 * time on, and a rollback to an older release of the devices that installed a revoked one.
 */
describe('firmware campaigns', () => {
  let t: TestApp;
  let admin: SignedIn;
  let owner: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
    owner = await aCustomer(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const aHardwareId = () => `hw-${randomBytes(4).toString('hex')}`;
  const publish = async (body: Partial<PublishBody> & { version: string }): Promise<Release> => {
    const { data, response } = await t.api.POST('/api/v1/admin/firmware', {
      body: { url: `https://firmware.example.com/${body.version}.bin`, sha256: 'ab'.repeat(32), size: 4096, ...body },
      headers: admin.headers,
    });
    if (response.status !== 201 || !data) throw new Error(`publishing ${body.version} answered ${response.status}`);
    return data;
  };
  const offered = async (gateway: Registered) => (await t.api.GET('/api/v1/ota/latest', { headers: bearer(gateway.accessToken) })).data!.firmware?.version ?? null;
  const tag = async (deviceId: string, tags: string[]) =>
    expect((await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body: { tags }, headers: owner.headers })).response.status).toBe(200);
  const ownedGateway = async (hardwareId: string, firmwareVersion = '1.0.0') => {
    const device = await aClaimedDevice(t, owner, { hardwareId, firmwareVersion });
    return { deviceId: device.body.deviceId, gateway: device.registered };
  };

  it('by tag: offered to the devices carrying any of its tags (as owners write them), and to a device once it is tagged', async () => {
    const hardwareId = aHardwareId();
    const pilot = await ownedGateway(hardwareId);
    const other = await ownedGateway(hardwareId);
    await tag(pilot.deviceId, ['Pilot', 'site-42']);
    const release = await publish({ version: '1.1.0', hardwareId, targetTags: ['PILOT', 'beta-testers'] });
    expect(release).toMatchObject({ targetTags: ['beta-testers', 'pilot'], targetDeviceCount: null, startsAt: null });

    expect(await offered(pilot.gateway)).toBe('1.1.0');
    expect(await offered(other.gateway)).toBeNull();
    // Tags are read from the device's snapshot: a new tag reaches the decision without a restart.
    await tag(other.deviceId, ['pilot']);
    await eventually(async () => expect(await offered(other.gateway)).toBe('1.1.0'));
  });

  it('by device ids, with tags: offered to the listed devices and the tagged ones; the staged percentage applies within', async () => {
    const hardwareId = aHardwareId();
    const listed = await registerDevice(t.api, { hardwareId, firmwareVersion: '1.0.0' });
    const unlisted = await registerDevice(t.api, { hardwareId, firmwareVersion: '1.0.0' });
    const tagged = await ownedGateway(hardwareId);
    await tag(tagged.deviceId, ['site-7']);
    const release = await publish({ version: '1.2.0', hardwareId, targetDeviceIds: [listed.deviceId, listed.deviceId, 'gw-elsewhere'], targetTags: ['site-7'] });
    expect(release.targetDeviceCount).toBe(2);
    expect(await offered(listed)).toBe('1.2.0');
    expect(await offered(tagged.gateway)).toBe('1.2.0');
    expect(await offered(unlisted)).toBeNull();

    // rolloutPercent 0 within the campaign: nobody, listed or not.
    const none = await publish({ version: '1.3.0', hardwareId, targetDeviceIds: [listed.deviceId], rolloutPercent: 0 });
    expect(none.targetDeviceCount).toBe(1);
    expect(await offered(listed)).toBe('1.2.0');
  });

  it('refuses a bad campaign, storing nothing: a tag no device can carry, a bad device id, more than 10,000 ids, a bad start', async () => {
    const before = (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM firmware_releases')).rows[0].n;
    const hardwareId = aHardwareId();
    const bad: Array<[Partial<PublishBody>, string]> = [
      [{ targetTags: ['no spaces'] }, 'targetTags[0]'],
      [{ targetDeviceIds: ['not a device id!'] }, 'targetDeviceIds'],
      [{ targetDeviceIds: Array.from({ length: 10_001 }, (_, i) => `gw-${i}`) }, 'targetDeviceIds'],
      [{ startsAt: 'Monday 02:00' }, 'startsAt'],
    ];
    for (const [overrides, field] of bad) {
      const problem = expectProblem(
        await t.api.POST('/api/v1/admin/firmware', { body: { version: '5.0.0', hardwareId, url: 'https://firmware.example.com/5.bin', sha256: 'ab'.repeat(32), size: 1, ...overrides }, headers: admin.headers }),
        400,
        'VALIDATION_FAILED',
      );
      expect(problem.errors?.map((error) => error.field)).toContain(field);
    }
    expect((await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM firmware_releases')).rows[0].n).toBe(before);
  });

  it('a scheduled start: offered from startsAt on, by the service’s clock', async () => {
    const hardwareId = aHardwareId();
    const gateway = await registerDevice(t.api, { hardwareId, firmwareVersion: '1.0.0' });
    const startsAt = new Date(t.clock.now().getTime() + 2 * HOUR);
    const release = await publish({ version: '1.4.0', hardwareId, startsAt: startsAt.toISOString() });
    expect(release.startsAt).toBe(startsAt.toISOString());

    expect(await offered(gateway)).toBeNull();
    t.clock.advanceMs(2 * HOUR + 1000);
    try {
      expect(await offered(gateway)).toBe('1.4.0');
    } finally {
      t.clock.reset();
    }
  });

  it('a rollback: devices that installed a revoked release are offered the older one it names, and the status counts those that went back', async () => {
    const hardwareId = aHardwareId();
    const back = await publish({ version: '1.5.0', hardwareId });
    const bad = await publish({ version: '2.0.0', hardwareId });
    const installed = await registerDevice(t.api, { hardwareId, firmwareVersion: '1.0.0' });
    const never = await registerDevice(t.api, { hardwareId, firmwareVersion: '1.9.0' });
    expect(await offered(installed)).toBe('2.0.0');
    const report = (gateway: Registered, fromVersion: string, toVersion: string) =>
      t.api.POST('/api/v1/ota/events', {
        body: {
          events: [
            { ts: new Date(Date.now() - 60_000).toISOString(), type: 'install_succeeded', fromVersion, toVersion },
            { ts: new Date().toISOString(), type: 'boot_confirmed', fromVersion, toVersion },
          ],
        },
        headers: bearer(gateway.accessToken),
      });
    expect((await report(installed, '1.0.0', '2.0.0')).response.status).toBe(200);
    await eventually(async () => expect(await offered(installed)).toBeNull());

    const change = (body: components['schemas']['ChangeFirmwareRequest'], id = bad.id) =>
      t.api.PATCH('/api/v1/admin/firmware/{id}', { params: { path: { id } }, body, headers: admin.headers });
    // A way back only with a revocation, to another, older, live release.
    expectProblem(await change({ rollbackTo: back.id }), 400, 'VALIDATION_FAILED');
    expectProblem(await change({ revoked: true, rollbackTo: bad.id }), 400, 'VALIDATION_FAILED');
    expectProblem(await change({ revoked: true, rollbackTo: '00000000-0000-4000-8000-000000000000' }), 400, 'VALIDATION_FAILED');
    expectProblem(await change({ revoked: true, rollbackTo: bad.id }, back.id), 400, 'VALIDATION_FAILED');
    expect((await t.db.query('SELECT revoked, rollback_to FROM firmware_releases WHERE id = $1', [bad.id])).rows).toEqual([{ revoked: false, rollback_to: null }]);

    const revoked = await change({ revoked: true, rollbackTo: back.id });
    expect(revoked.response.status).toBe(200);
    expect(revoked.data).toMatchObject({ revoked: true, rollbackTo: back.id });
    // The device on 2.0.0 is offered 1.5.0, a downgrade; one that never took 2.0.0 gets nothing older than it runs.
    await eventually(async () => expect(await offered(installed)).toBe('1.5.0'));
    expect(await offered(never)).toBeNull();

    expect((await report(installed, '2.0.0', '1.5.0')).response.status).toBe(200);
    await eventually(async () => expect(await offered(installed)).toBeNull());
    const { data: status } = await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id: bad.id } }, headers: admin.headers });
    expect(status!.rollback).toEqual({ releaseId: back.id, devices: 1 });

    // Un-revoking drops the way back.
    expect((await change({ revoked: false })).data).toMatchObject({ revoked: false, rollbackTo: null });
  });
});
