import { aClaimCode, aDeviceId, bearer } from '../support/builders.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, ADMIN_SETTINGS } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';

const PUBLIC_BASE_URL = 'https://dash.example';
const HOUR = 3_600_000;

/**
 * A day in the product's life, through the generated client only (every answer is also checked
 * against openapi.json): a gateway comes online, a customer signs up and claims it, an
 * administrator ships firmware, the gateway updates, the customer sees all of it.
 */
describe('journey: a day of a gateway, its owner and an administrator', () => {
  let t: TestApp;
  let sink: SmtpSink;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ ...ADMIN_SETTINGS, SMTP_URL: sink.url, PUBLIC_BASE_URL });
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  it('register → telemetry → config → claim → trends → firmware → update events → history', async () => {
    const api = t.api;
    const start = Date.now() - 12 * HOUR;

    // 06:00 The gateway joins Wi-Fi and registers with the claim code printed on its label.
    const deviceId = aDeviceId('journey');
    const claimCode = aClaimCode();
    const registered = await api.POST('/api/v1/device/register', {
      body: { deviceId, hardwareId: 'esp32s3-journey', firmwareVersion: '0.1.9', claimCode },
    });
    expect(registered.response.status).toBe(201);
    const { deviceSecret, config: initialConfig } = registered.data!;

    // It logs in with its secret, as after every reboot.
    const loggedIn = await api.POST('/api/v1/device/login', { body: { deviceId, deviceSecret } });
    expect(loggedIn.response.status).toBe(200);
    const gateway = bearer(loggedIn.data!.accessToken);

    // 06:00–18:00 Telemetry every 10 minutes, uploaded in batches of 12 (two hours).
    const records = Array.from({ length: 72 }, (_, i) => ({
      ts: new Date(start + i * 10 * 60_000).toISOString(),
      metrics: { voltage: 52 + (i % 6) / 10, current: -2.5, soc: 90 - i / 2, temperature: 21 + (i % 3) },
    }));
    let accepted = 0;
    for (let i = 0; i < records.length; i += 12) {
      const upload = await api.POST('/api/v1/telemetry', { body: { records: records.slice(i, i + 12) }, headers: gateway });
      expect(upload.response.status).toBe(200);
      accepted += upload.data!.accepted;
    }
    expect(accepted).toBe(72);
    // A retry of the last batch after a lost response stores nothing twice.
    const retried = await api.POST('/api/v1/telemetry', { body: { records: records.slice(60) }, headers: gateway });
    expect(retried.data).toEqual({ accepted: 0, duplicates: 12, rejected: [] });

    // It reads its configuration, polls it with the ETag, and confirms what it applied.
    const config = await api.GET('/api/v1/device/config', { headers: gateway });
    expect(config.data).toEqual(initialConfig);
    const etag = config.response.headers.get('etag')!;
    expect((await api.GET('/api/v1/device/config', { headers: { ...gateway, 'if-none-match': etag } })).response.status).toBe(304);
    expect((await api.POST('/api/v1/device/config/applied', { body: { version: config.data!.version }, headers: gateway })).response.status).toBe(204);

    // No firmware yet.
    const noUpdate = await api.GET('/api/v1/ota/latest', { headers: gateway });
    expect(noUpdate.data).toEqual({ updateAvailable: false, currentVersion: '0.1.9', firmware: null });

    // 09:00 A customer signs up, follows the link in the verification mail, signs in and claims the gateway.
    const email = `owner-${deviceId}@example.com`;
    expect((await api.POST('/api/v1/auth/signup', { body: { email, password: 'correct horse battery' } })).response.status).toBe(201);
    const mail = await sink.waitForMessage(email);
    const token = decodeURIComponent(/verify-email\?token=(\S+)/.exec(mail.text)![1]);
    expect((await api.POST('/api/v1/auth/verify-email', { body: { token } })).response.status).toBe(200);
    const session = await api.POST('/api/v1/auth/login', { body: { email, password: 'correct horse battery' } });
    const customer = bearer(session.data!.accessToken);
    const claimed = await api.POST('/api/v1/user/devices/claim', { body: { deviceId, claimCode }, headers: customer });
    expect(claimed.response.status).toBe(200);

    // The dashboard lists the gateway, in sync, with its latest metrics.
    const devices = await api.GET('/api/v1/dashboard/devices', { headers: customer });
    expect(devices.data!.items).toEqual([
      expect.objectContaining({ deviceId, firmwareVersion: '0.1.9', config: expect.objectContaining({ status: 'in_sync' }) }),
    ]);
    expect(devices.data!.items[0].latestMetrics).toEqual(
      expect.arrayContaining([expect.objectContaining({ metric: 'soc', value: records[71].metrics.soc, ts: records[71].ts })]),
    );

    // Trends of the day: hourly state of charge, computed by the service, equal to the raw values.
    const trend = await api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', {
      params: { path: { deviceId }, query: { from: new Date(start).toISOString(), to: new Date(start + 12 * HOUR).toISOString(), metrics: 'soc', bucket: '3600' } },
      headers: customer,
    });
    expect(trend.response.status).toBe(200);
    const points = trend.data!.series[0].points;
    expect(points.reduce((sum, point) => sum + point.count, 0)).toBe(72);
    const firstHour = records.filter((record) => Date.parse(record.ts) < Math.floor(start / HOUR) * HOUR + HOUR).map((record) => record.metrics.soc);
    expect(points[0].max).toBeCloseTo(Math.max(...firstHour), 9);

    // 14:00 The administrator publishes firmware 0.1.10 for this hardware.
    const admin = await api.POST('/api/v1/auth/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    const adminAuth = bearer(admin.data!.accessToken);
    const release = await api.POST('/api/v1/admin/firmware', {
      body: { version: '0.1.10', hardwareId: 'esp32s3-journey', url: 'https://firmware.example.com/journey/0.1.10.bin', sha256: 'ab'.repeat(32), size: 1_572_864, releaseNotes: 'Faster uploads.' },
      headers: adminAuth,
    });
    expect(release.response.status).toBe(201);

    // The gateway's next OTA check offers it (0.1.10 > 0.1.9).
    const offer = await api.GET('/api/v1/ota/latest', { headers: gateway });
    expect(offer.data).toEqual({
      updateAvailable: true,
      currentVersion: '0.1.9',
      firmware: expect.objectContaining({ version: '0.1.10', url: 'https://firmware.example.com/journey/0.1.10.bin', sha256: 'ab'.repeat(32), size: 1_572_864 }),
    });

    // It downloads, verifies, installs, reboots and reports each step (one batch retried).
    const at = (minutes: number) => new Date(Date.now() - 30 * 60_000 + minutes * 60_000).toISOString();
    const update = { fromVersion: '0.1.9', toVersion: '0.1.10' };
    const events = [
      { ts: at(0), type: 'download_started' as const, ...update },
      { ts: at(1), type: 'download_progress' as const, progressPct: 50, ...update },
      { ts: at(2), type: 'download_completed' as const, ...update },
      { ts: at(3), type: 'install_started' as const, ...update },
      { ts: at(4), type: 'install_succeeded' as const, ...update },
      { ts: at(5), type: 'boot_confirmed' as const, ...update },
    ];
    const reported = await api.POST('/api/v1/ota/events', { body: { events }, headers: gateway });
    expect(reported.data).toEqual({ accepted: 6, duplicates: 0, coalesced: 0, rejected: [] });
    expect((await api.POST('/api/v1/ota/events', { body: { events }, headers: gateway })).data).toEqual({ accepted: 0, duplicates: 6, coalesced: 0, rejected: [] });
    const after = await api.GET('/api/v1/ota/latest', { headers: gateway });
    expect(after.data).toEqual({ updateAvailable: false, currentVersion: '0.1.10', firmware: null });

    // 18:00 The customer sees the new firmware and the update, newest event first.
    const detail = await api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers: customer });
    expect(detail.data!.firmwareVersion).toBe('0.1.10');
    const history = await api.GET('/api/v1/dashboard/devices/{deviceId}/ota/history', { params: { path: { deviceId } }, headers: customer });
    expect(history.data!.items.map((item) => item.type)).toEqual(['boot_confirmed', 'install_succeeded', 'install_started', 'download_completed', 'download_progress', 'download_started']);

    // And the administrator sees the release installed on one device.
    const status = await api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id: release.data!.id } }, headers: adminAuth });
    expect(status.data!.devices).toEqual({ offered: 1, downloading: 0, installing: 0, installed: 1, failed: 0, rolledBack: 0, stalled: 0, heldBack: 0 });
  });
});
