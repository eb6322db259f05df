import { bearer, registerDevice } from '../support/builders.js';
import { ADMIN_SETTINGS, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';

describe('smoke: config and OTA', () => {
  let t: TestApp;
  let admin: SignedIn;
  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('config 200 then 304, applied 204; ota latest with release; events', async () => {
    const device = await registerDevice(t.api, { firmwareVersion: '0.1.9' });
    const first = await t.api.GET('/api/v1/device/config', { headers: bearer(device.accessToken) });
    expect(first.response.status).toBe(200);
    const etag = first.response.headers.get('etag')!;
    expect(etag).toMatch(/^"config-\d+"$/);
    const second = await t.api.GET('/api/v1/device/config', { headers: { ...bearer(device.accessToken), 'if-none-match': etag } });
    expect(second.response.status).toBe(304);
    expect(await second.response.text()).toBe('');
    const applied = await t.api.POST('/api/v1/device/config/applied', { body: { version: first.data!.version }, headers: bearer(device.accessToken) });
    expect(applied.response.status).toBe(204);

    const publish = await t.api.POST('/api/v1/admin/firmware', {
      body: { version: '0.1.10', url: 'https://fw.example.com/0.1.10.bin', sha256: 'a'.repeat(64), size: 1000 },
      headers: admin.headers,
    });
    expect(publish.response.status).toBe(201);
    const latest = await t.api.GET('/api/v1/ota/latest', { headers: bearer(device.accessToken) });
    expect(latest.response.status).toBe(200);
    expect(latest.data).toMatchObject({ updateAvailable: true, currentVersion: '0.1.9', firmware: { version: '0.1.10' } });
    const events = await t.api.POST('/api/v1/ota/events', {
      body: { events: [{ ts: new Date().toISOString(), type: 'install_succeeded', fromVersion: '0.1.9', toVersion: '0.1.10' }] },
      headers: bearer(device.accessToken),
    });
    expect(events.response.status).toBe(200);
    expect(events.data).toMatchObject({ accepted: 1, duplicates: 0 });
    const after = await t.api.GET('/api/v1/ota/latest', { headers: bearer(device.accessToken) });
    expect(after.data).toMatchObject({ updateAvailable: false, currentVersion: '0.1.10', firmware: null });
    const status = await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id: publish.data!.id } }, headers: admin.headers });
    expect(status.data).toMatchObject({ devices: { offered: 1, installed: 1 } });
  });
});
