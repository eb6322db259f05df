import { randomBytes } from 'node:crypto';
import { aClaimedDevice, aCustomer, ADMIN_SETTINGS, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { bearer } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem } from '../support/problems.js';
import { ingestAll, iso } from '../support/telemetry.js';

/**
 * Battery-aware updates: GET /ota/latest keeps an offer back while a battery's newest
 * soc is below otaMinSoc (default 40) or its temperature outside otaTemperatureRange (default
 * 0–45 °C), says why, and counts it in the release's status; the offer comes back as the battery
 * recovers. Through the generated client, with a real gateway's uploads.
 */
describe('battery-aware OTA offers', () => {
  let t: TestApp;
  let admin: SignedIn;
  let owner: SignedIn;

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    [admin, owner] = await Promise.all([anAdmin(t), aCustomer(t)]);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A claimed gateway on its own hardware model, with a release above its firmware published for that model. */
  async function aGatewayWithAnUpdate() {
    const hardwareId = `hw-${randomBytes(4).toString('hex')}`;
    const gateway = await aClaimedDevice(t, owner, { hardwareId, firmwareVersion: '1.0.0' });
    const published = await t.api.POST('/api/v1/admin/firmware', {
      body: { version: '1.1.0', hardwareId, url: `https://fw.example.com/${hardwareId}.bin`, sha256: randomBytes(32).toString('hex'), size: 1024 },
      headers: admin.headers,
    });
    expect(published.response.status).toBe(201);
    let at = Date.now() - 60_000;
    const send = (metrics: Record<string, number>, batteryId = 'main') => ingestAll(t.api, gateway.registered.accessToken, [{ ts: iso((at += 1000)), batteryId, metrics }]);
    const latest = (ifNoneMatch?: string) =>
      t.api.GET('/api/v1/ota/latest', { headers: { ...bearer(gateway.registered.accessToken), ...(ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {}) } });
    const counts = async () => (await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id: published.data!.id } }, headers: admin.headers })).data!.devices;
    return { deviceId: gateway.body.deviceId, release: published.data!, send, latest, counts };
  }

  it('holds the offer back while the soc is low, counts it, and offers it as the battery recovers', async () => {
    const gateway = await aGatewayWithAnUpdate();
    await gateway.send({ soc: 35, temperature: 20 });

    const held = await gateway.latest();
    expect(held.response.status).toBe(200);
    expect(held.data).toEqual({ updateAvailable: false, currentVersion: '1.0.0', firmware: null, heldBack: { reason: 'LOW_SOC' } });
    expect(await gateway.counts()).toMatchObject({ offered: 0, heldBack: 1 });
    const heldTag = held.response.headers.get('etag')!;
    expect((await gateway.latest(heldTag)).response.status).toBe(304);

    await gateway.send({ soc: 41, temperature: 20 });
    const offered = await gateway.latest(heldTag);
    expect(offered.response.status).toBe(200);
    expect(offered.data).toMatchObject({ updateAvailable: true, firmware: { version: '1.1.0' } });
    expect(offered.data!.heldBack).toBeUndefined();
    expect(await gateway.counts()).toMatchObject({ offered: 1, heldBack: 0 });
  });

  it('holds it back while any battery is outside the temperature range, ends included', async () => {
    const gateway = await aGatewayWithAnUpdate();
    await gateway.send({ soc: 90, temperature: 45 });
    await gateway.send({ soc: 90, temperature: 0 }, 'second');
    expect((await gateway.latest()).data).toMatchObject({ updateAvailable: true });

    await gateway.send({ soc: 90, temperature: -1 }, 'second');
    expect((await gateway.latest()).data).toEqual({ updateAvailable: false, currentVersion: '1.0.0', firmware: null, heldBack: { reason: 'TEMPERATURE' } });
    await gateway.send({ soc: 90, temperature: 46 });
    await gateway.send({ soc: 90, temperature: 20 }, 'second');
    expect((await gateway.latest()).data!.heldBack).toEqual({ reason: 'TEMPERATURE' });
  });

  it('never holds back a gateway that reports neither soc nor temperature', async () => {
    const gateway = await aGatewayWithAnUpdate();
    await gateway.send({ voltage: 12.1 });
    expect((await gateway.latest()).data).toMatchObject({ updateAvailable: true, firmware: { version: '1.1.0' } });
  });

  it('follows the device’s own otaMinSoc and otaTemperatureRange, set by its owner, and refuses bad values', async () => {
    const gateway = await aGatewayWithAnUpdate();
    await gateway.send({ soc: 30, temperature: 50 });
    expect((await gateway.latest()).data!.heldBack).toEqual({ reason: 'LOW_SOC' });
    const path = { deviceId: gateway.deviceId };

    const patched = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path }, body: { otaMinSoc: 25, otaTemperatureRange: { min: -10, max: 55 } }, headers: owner.headers });
    expect(patched.response.status).toBe(200);
    expect(patched.data!.config).toMatchObject({ otaMinSoc: 25, otaTemperatureRange: { min: -10, max: 55 } });
    expect((await gateway.latest()).data).toMatchObject({ updateAvailable: true });

    for (const body of [{ otaMinSoc: 101 }, { otaTemperatureRange: { min: 50, max: 10 } }, { otaTemperatureRange: { min: 0 } }]) {
      const refused = await t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path }, body: body as never, headers: owner.headers });
      expectProblem(refused, 400, 'VALIDATION_FAILED');
    }
    const config = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/config', { params: { path }, headers: owner.headers });
    expect(config.data!.overrides).toEqual({ otaMinSoc: 25, otaTemperatureRange: { min: -10, max: 55 } });
  });

  it('the fleet defaults ship as 40 % and 0–45 °C', async () => {
    const defaults = await t.api.GET('/api/v1/admin/config/defaults', { headers: admin.headers });
    expect(defaults.data).toMatchObject({ otaMinSoc: 40, otaTemperatureRange: { min: 0, max: 45 } });
  });
});
