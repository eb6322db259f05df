import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { components } from '@device-cloud/client';
import type { Summary } from '../../examples/gateway-simulator.js';
import { selfSignedCertificate, type Certificate } from '../support/certificates.js';
import { ADMIN_SETTINGS, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { firmwareServer, startSimulator } from '../support/gateway-simulator.js';

async function telemetryCounts(t: TestApp, prefix: string): Promise<Record<string, number>> {
  const { rows } = await t.db.query<{ device_id: string; n: number }>(
    "SELECT device_id, count(*)::int AS n FROM telemetry WHERE device_id LIKE $1 || '-%' GROUP BY device_id",
    [prefix],
  );
  return Object.fromEntries(rows.map((row) => [row.device_id, row.n]));
}

async function registered(t: TestApp, prefix: string): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM devices WHERE device_id LIKE $1 || '-%'", [prefix]);
  return rows[0].n;
}

const storedPerGateway = (summary: Summary) => Object.fromEntries(summary.perGateway.map((gateway) => [gateway.deviceId, gateway.sampled]));
const aPrefix = () => `sim-${randomBytes(3).toString('hex')}`;

describe('the gateway simulator (examples/gateway-simulator.ts) against the real service', () => {
  let dir: string;
  let certificate: Certificate;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dcs-simulator-'));
    certificate = selfSignedCertificate(dir, 'firmware-cdn');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  describe('on a service with the default limits', () => {
    let t: TestApp;
    let admin: SignedIn;
    beforeAll(async () => {
      t = await createTestApp({ ...ADMIN_SETTINGS });
      admin = await anAdmin(t);
    });
    afterAll(async () => {
      await t.close();
    });

    it('registers every gateway, stores its telemetry, polls with ETags, installs the published release, crashes and reports it', async () => {
      const image = randomBytes(64 * 1024);
      const cdn = await firmwareServer(certificate, { '/fw/0.2.0.bin': image });
      const release = await publish(t, admin, { version: '0.2.0', url: `${cdn.base}/fw/0.2.0.bin`, sha256: createHash('sha256').update(image).digest('hex'), size: image.length });
      try {
        const prefix = aPrefix();

        // An upload every 0.8 s and a panic after every third: each gateway crashes once or twice, after its update.
        const { code, summary } = await startSimulator(
          ['--url', t.baseUrl, '--gateways', '3', '--prefix', prefix, '--firmware', '0.1.4', '--interval', '0.2', '--batch', '4', '--duration', '5']
            .concat(['--config-interval', '1', '--ramp', '0.5', '--install-sec', '0.2', '--crash-every', '3']),
          certificate,
        ).finished;

        expect(code).toBe(0);
        expect(summary.online).toBe(3);
        // Each gateway's records are in the database, every one it sampled, once.
        const counts = await telemetryCounts(t, prefix);
        expect(Object.keys(counts).sort()).toEqual([1, 2, 3].map((n) => `${prefix}-000${n}`));
        expect(counts).toEqual(storedPerGateway(summary));
        for (const n of Object.values(counts)) expect(n).toBeGreaterThan(0);
        expect(summary.config.unchanged).toBeGreaterThan(0);
        // The update, step by step, as the service recorded it for each gateway.
        const { rows: events } = await t.db.query<{ device_id: string; type: string; to_version: string }>(
          "SELECT device_id, type, to_version FROM ota_events WHERE device_id LIKE $1 || '-%' ORDER BY device_id, ts, id",
          [prefix],
        );
        for (const n of [1, 2, 3]) {
          expect(events.filter((event) => event.device_id === `${prefix}-000${n}`).map((event) => `${event.type} ${event.to_version}`)).toEqual(
            ['check', 'download_started', 'download_completed', 'install_started', 'install_succeeded', 'boot_confirmed'].map((type) => `${type} 0.2.0`),
          );
        }
        const { rows: devices } = await t.db.query<{ firmware_version: string }>("SELECT firmware_version FROM devices WHERE device_id LIKE $1 || '-%'", [prefix]);
        expect(devices.map((device) => device.firmware_version)).toEqual(['0.2.0', '0.2.0', '0.2.0']);
        expect(cdn.downloads).toEqual(['/fw/0.2.0.bin', '/fw/0.2.0.bin', '/fw/0.2.0.bin']);
        const status = await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id: release } }, headers: admin.headers });
        expect(status.data?.devices).toMatchObject({ offered: 3, installed: 3, failed: 0 });

        // Every boot's reason, once: the power-on, the restart into 0.2.0, and each panic, reported after the login that followed it.
        const crashes = Object.fromEntries(summary.perGateway.map((gateway) => [gateway.deviceId, gateway.crashes]));
        const panics: Array<components['schemas']['CrashResponse']> = [];
        for (const deviceId of Object.keys(counts)) {
          expect(crashes[deviceId]).toBeGreaterThan(0);
          const reports = await crashesOf(t, admin, deviceId);
          expect(reports.map((report) => report.resetReason).sort()).toEqual(['poweron', 'sw', ...Array<string>(crashes[deviceId]).fill('panic')].sort());
          expect(new Set(reports.map((report) => report.crashId)).size).toBe(reports.length);
          panics.push(...reports.filter((report) => report.resetReason === 'panic'));
          // A new session for each restart: the registration's, the update's and one per crash.
          const { rows } = await t.db.query<{ n: number }>('SELECT count(DISTINCT family_id)::int AS n FROM device_refresh_tokens WHERE device_id = $1', [deviceId]);
          expect(rows[0].n).toBe(2 + crashes[deviceId]);
        }
        expect(summary.crashes).toMatchObject({ crashed: panics.length, reported: { poweron: 3, sw: 3, panic: panics.length }, repeats: 0 });
        // One firmware, one bug: every panic has the same backtrace, so they make one group of three devices.
        expect(panics.map((report) => report.firmwareVersion)).toEqual(panics.map(() => '0.2.0'));
        expect(new Set(panics.map((report) => report.groupId)).size).toBe(1);
        const groups = await t.api.GET('/api/v1/admin/crash-groups', { headers: admin.headers });
        expect(groups.data?.items.find((group) => group.groupId === panics[0].groupId)).toMatchObject({ resetReason: 'panic', crash: true, devices: 3, crashes: panics.length, firmwareVersions: ['0.2.0'] });
        // Release health counts them: each gateway crashed on the release it confirmed.
        const health = await t.api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id: release } }, headers: admin.headers });
        expect(health.data?.health).toMatchObject({ bootConfirmed: 3, crashed: 3 });
      } finally {
        await cdn.close();
        await revoke(t, admin, release);
      }
    });

    it('reports a release whose image does not match its SHA-256 as verify_failed and keeps its firmware', async () => {
      const image = randomBytes(16 * 1024);
      const cdn = await firmwareServer(certificate, { '/fw/0.3.0.bin': image });
      const release = await publish(t, admin, { version: '0.3.0', url: `${cdn.base}/fw/0.3.0.bin`, sha256: createHash('sha256').update('another image').digest('hex'), size: image.length });
      try {
        const prefix = aPrefix();

        const { code, summary } = await startSimulator(['--url', t.baseUrl, '--gateways', '1', '--prefix', prefix, '--interval', '0.5', '--duration', '2', '--ramp', '0'], certificate).finished;

        expect(code).toBe(0);
        expect(summary.ota).toMatchObject({ offers: 1, downloads: 0, installed: 0, failed: 1 });
        const { rows } = await t.db.query<{ type: string; error_code: string | null }>("SELECT type, error_code FROM ota_events WHERE device_id = $1 || '-0001' ORDER BY ts, id", [prefix]);
        expect(rows).toEqual([
          { type: 'check', error_code: null },
          { type: 'download_started', error_code: null },
          { type: 'verify_failed', error_code: 'E_SHA_MISMATCH' },
        ]);
        const { rows: device } = await t.db.query<{ firmware_version: string }>("SELECT firmware_version FROM devices WHERE device_id = $1 || '-0001'", [prefix]);
        expect(device[0].firmware_version).toBe('0.1.4');
      } finally {
        await cdn.close();
        await revoke(t, admin, release);
      }
    });

    it('runs the commands sent to it: reboots and logs in again, answers a ping, uploads now, sets its log level, collects its logs, rejects what it cannot run', async () => {
      const prefix = aPrefix();
      const deviceId = `${prefix}-0001`;
      // Batches of 500 at 5 samples a second: only upload-now sends telemetry before the stop.
      const simulator = startSimulator(
        ['--url', t.baseUrl, '--gateways', '1', '--prefix', prefix, '--interval', '0.2', '--batch', '500', '--config-interval', '0.5', '--ramp', '0', '--install-sec', '0.2'],
        certificate,
      );
      await eventually(async () => expect(await registered(t, prefix)).toBe(1));

      const sent: string[] = [];
      for (const body of [
        { type: 'reboot' },
        { type: 'ping' },
        { type: 'upload-now' },
        { type: 'set-log-level', params: { level: 'debug' } },
        { type: 'collect-logs', params: { sinceSec: 600 } },
        { type: 'custom', params: { name: 'relay.toggle', payload: { relay: 2 } } },
      ] as const) {
        sent.push(await sendCommand(t, admin, deviceId, body));
      }

      const finals = await eventually(async () => {
        const commands = await commandsOf(t, admin, deviceId);
        expect(commands.map((command) => [command.commandId, command.state])).toEqual(
          sent.map((commandId, index) => [commandId, ['succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'rejected'][index]]),
        );
        return commands;
      }, 20_000);
      const [reboot, ping, uploadNow, setLogLevel, collectLogs, custom] = finals;
      expect(reboot.output).toBe('restarted, runs 0.1.4');
      expect(ping.output).toMatch(/^runs 0\.1\.4, up \d+ s$/);
      expect(setLogLevel.output).toBe('log level debug');
      expect(custom.output).toBe('unknown command relay.toggle');
      // collect-logs sent the lines of its span, info lines too, though logUpload (errors, the default) sends errors only.
      const collected = Number(/^uploaded (\d+) log lines of the last 600 s/.exec(collectLogs.output ?? '')?.[1]);
      expect(collected).toBeGreaterThan(0);
      const lines = await linesOf(t, admin, deviceId);
      expect(lines.length).toBeGreaterThanOrEqual(collected);
      expect(lines).toContainEqual(expect.objectContaining({ level: 'info', tag: 'log', message: 'log level debug' }));
      expect(lines).toContainEqual(expect.objectContaining({ level: 'info', tag: 'commands', message: `run ${collectLogs.commandId}: collect-logs` }));
      // upload-now sent what was buffered, though far from a batch of 500.
      const uploaded = Number(/^uploaded (\d+) buffered records$/.exec(uploadNow.output ?? '')?.[1]);
      expect(uploaded).toBeGreaterThan(0);
      expect((await telemetryCounts(t, prefix))[deviceId]).toBeGreaterThanOrEqual(uploaded);
      // The reboot was accepted, then the gateway logged in again (a new refresh-token family: a login), then it succeeded.
      const { rows: sessions } = await t.db.query<{ issued_at: Date }>(
        'SELECT min(issued_at) AS issued_at FROM device_refresh_tokens WHERE device_id = $1 GROUP BY family_id ORDER BY 1',
        [deviceId],
      );
      expect(sessions).toHaveLength(2);
      expect(sessions[1].issued_at.getTime()).toBeGreaterThanOrEqual(new Date(reboot.acceptedAt!).getTime());
      expect(sessions[1].issued_at.getTime()).toBeLessThanOrEqual(new Date(reboot.finishedAt!).getTime());

      simulator.child.kill('SIGINT');
      const { code, summary } = await simulator.finished;

      expect(code).toBe(0);
      expect(summary.identity).toMatchObject({ registered: 1, logins: 1 });
      expect(summary.commands).toMatchObject({ mode: 'short poll', received: 6, succeeded: 5, rejected: 1, failed: 0, finished: 0, reboots: 1 });
      expect(summary.logs.accepted).toBeGreaterThanOrEqual(collected);
      expect(summary.perGateway).toEqual([expect.objectContaining({ deviceId, logLevel: 'debug' })]);
    });

    it('with --long-poll gets a command about a second after it was sent, and stops at once while its poll is held', async () => {
      const prefix = aPrefix();
      const deviceId = `${prefix}-0001`;
      // Config and OTA polls an hour apart: only the long poll can bring the command.
      const simulator = startSimulator(
        ['--url', t.baseUrl, '--gateways', '1', '--prefix', prefix, '--interval', '0.5', '--long-poll', '--config-interval', '3600', '--ota-interval', '3600', '--ramp', '0'],
        certificate,
      );
      await eventually(async () => expect(await waitingPolls(t)).toBe(1));

      const sentAt = Date.now();
      const commandId = await sendCommand(t, admin, deviceId, { type: 'ping' });
      await eventually(async () => expect((await commandsOf(t, admin, deviceId)).map((command) => [command.commandId, command.state])).toEqual([[commandId, 'succeeded']]));
      expect(Date.now() - sentAt).toBeLessThan(3000);
      // Polled again and held, until the stop gives the poll up.
      await eventually(async () => expect(await waitingPolls(t)).toBe(1));

      const stoppedAt = Date.now();
      simulator.child.kill('SIGINT');
      const { code, summary } = await simulator.finished;

      expect(Date.now() - stoppedAt).toBeLessThan(5000);
      expect(code).toBe(0);
      expect(summary.commands).toMatchObject({ mode: 'long poll', received: 1, succeeded: 1, repeats: 0 });
      expect(summary.answers['no answer']).toBeUndefined();
    });

    it('on Ctrl-C stops sampling, uploads what it buffered and prints the summary', async () => {
      const prefix = aPrefix();
      // Batches of 500 at 20 samples a second: nothing is uploaded before the stop.
      const simulator = startSimulator(['--url', t.baseUrl, '--gateways', '2', '--prefix', prefix, '--interval', '0.05', '--batch', '500', '--ramp', '0'], certificate);
      await eventually(async () => expect(await registered(t, prefix)).toBe(2));
      await new Promise((done) => setTimeout(done, 1000));
      expect(await telemetryCounts(t, prefix)).toEqual({});

      simulator.child.kill('SIGINT');
      const { code, summary, stderr } = await simulator.finished;

      expect(code).toBe(0);
      expect(stderr).toContain('Stopping: uploading what is buffered');
      expect(summary.telemetry).toMatchObject({ uploads: 2, dropped: 0, unsent: 0 });
      const counts = await telemetryCounts(t, prefix);
      expect(counts).toEqual(storedPerGateway(summary));
      for (const n of Object.values(counts)) expect(n).toBeGreaterThan(5);
    });
  });

  describe('on a service that allows one upload per device every 4 s, and 1 KiB of log lines a day', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({ ...ADMIN_SETTINGS, TELEMETRY_MAX_REQUESTS_PER_DEVICE: '1', TELEMETRY_RATE_WINDOW_SEC: '4', LOG_BYTES_PER_DEVICE_PER_DAY: '1024' });
      // Every gateway logs a line a sample and uploads all of them.
      const admin = await anAdmin(t);
      const { response } = await t.api.PATCH('/api/v1/admin/config/defaults', { body: { logLevel: 'info', logUpload: 'all' }, headers: admin.headers });
      if (response.status !== 200) throw new Error(`setting the fleet defaults answered ${response.status}`);
    });
    afterAll(async () => {
      await t.close();
    });

    it('waits Retry-After after a 429, at most one refusal per window, and loses no record; stops uploading logs once the quota is spent', async () => {
      const prefix = aPrefix();

      const { code, summary } = await startSimulator(
        ['--url', t.baseUrl, '--gateways', '2', '--prefix', prefix, '--interval', '0.1', '--batch', '1', '--duration', '5', '--ramp', '0'],
        certificate,
      ).finished;

      expect(code).toBe(0);
      const refusals = summary.answers['429 RATE_LIMITED'] ?? 0;
      expect(refusals).toBeGreaterThan(0);
      // A gateway that waits Retry-After after a refusal next sends after its window ended: one
      // refusal per 4-second window at most. Retrying sooner (the backoff alone: 0.5–1 s, 1–2 s, …)
      // is refused three or four times in each.
      expect(refusals).toBeLessThanOrEqual(2 * Math.ceil(summary.seconds / 4));
      expect(await telemetryCounts(t, prefix)).toEqual(storedPerGateway(summary));
      expect(summary.telemetry).toMatchObject({ dropped: 0, unsent: 0 });
      // The upload that crossed 1 KiB was stored whole; the next was refused until midnight UTC, and no gateway asked again.
      expect(summary.logs.accepted).toBeGreaterThan(0);
      expect(summary.logs.quotaRefusals).toBe(summary.answers['429 LOG_QUOTA_EXCEEDED']);
      expect(summary.logs.quotaRefusals).toBeGreaterThan(0);
      expect(summary.logs.quotaRefusals).toBeLessThanOrEqual(2);
    });
  });
});

async function sendCommand(t: TestApp, sender: SignedIn, deviceId: string, body: components['schemas']['SendCommandRequest']): Promise<string> {
  const { data, response } = await t.api.POST('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId } }, body, headers: sender.headers });
  if (response.status !== 201 || !data) throw new Error(`sending ${body.type} answered ${response.status}`);
  return data.commandId;
}

/** The device's commands as the dashboard reads them, oldest first. */
async function commandsOf(t: TestApp, reader: SignedIn, deviceId: string): Promise<Array<components['schemas']['CommandResponse']>> {
  const { data, response } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/commands', { params: { path: { deviceId } }, headers: reader.headers });
  if (response.status !== 200 || !data) throw new Error(`listing commands answered ${response.status}`);
  return data.items.toReversed();
}

/** The device's crash reports and reboot reasons as the dashboard reads them. */
async function crashesOf(t: TestApp, reader: SignedIn, deviceId: string): Promise<Array<components['schemas']['CrashResponse']>> {
  const { data, response } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/crashes', { params: { path: { deviceId } }, headers: reader.headers });
  if (response.status !== 200 || !data) throw new Error(`listing crashes answered ${response.status}`);
  return data.items;
}

/** The device's log lines as the dashboard reads them, newest first. */
async function linesOf(t: TestApp, reader: SignedIn, deviceId: string): Promise<Array<components['schemas']['LogLineResponse']>> {
  const { data, response } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}/logs', { params: { path: { deviceId }, query: { limit: 500 } }, headers: reader.headers });
  if (response.status !== 200 || !data) throw new Error(`listing log lines answered ${response.status}`);
  return data.items;
}

/** Long polls of commands the service holds. */
async function waitingPolls(t: TestApp): Promise<number> {
  const { CommandWaiters } = await import('../../src/modules/commands/index.js');
  return t.app.get(CommandWaiters).size;
}

async function publish(t: TestApp, admin: SignedIn, body: { version: string; url: string; sha256: string; size: number }): Promise<string> {
  const { data, response } = await t.api.POST('/api/v1/admin/firmware', { body, headers: admin.headers });
  if (response.status !== 201 || !data) throw new Error(`publishing ${body.version} answered ${response.status}`);
  return data.id;
}

/** Later tests' gateways run the same firmware: a release of an earlier test must not be offered to them. */
async function revoke(t: TestApp, admin: SignedIn, releaseId: string): Promise<void> {
  const { response } = await t.api.PATCH('/api/v1/admin/firmware/{id}', { params: { path: { id: releaseId } }, body: { revoked: true }, headers: admin.headers });
  if (response.status !== 200) throw new Error(`revoking ${releaseId} answered ${response.status}`);
}
