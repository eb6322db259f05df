import { randomBytes } from 'node:crypto';
import type { components } from '@device-cloud/client';
import { ADMIN_SETTINGS, CUSTOMER_PASSWORD, aClaimedDevice, aCustomer, anAdmin, type SignedIn } from '../support/claim-fixtures.js';
import { bearer } from '../support/builders.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { eventually } from '../support/eventually.js';
import { expectProblem, fieldsOf, type Problem } from '../support/problems.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';
import { dataOf, openSse, type SseMessage, type SseStream } from '../support/sse.js';
import { HOUR, ingest, iso, type TelemetryRecordBody } from '../support/telemetry.js';

/*
 * Device sharing: POST/GET/DELETE /api/v1/user/devices/:deviceId/shares, and what a
 * viewer and an installer may do on every read and write path (history, OTA history, configuration,
 * events, alerts, alert rules, names, the stream); a revocation or a release ends access at once;
 * a share to an address without an account waits for its verified sign-up; nothing tells whether
 * an address has an account.
 */

type Who = { headers: { authorization: string } };
type ShareBody = components['schemas']['CreateShareRequest'];
type EventData = { id: string; type: string; deviceId: string };

interface Gateway {
  deviceId: string;
  accessToken: string;
}

interface ShareRow {
  share_id: string;
  device_id: string;
  granted_by: string;
  email: string;
  user_id: string | null;
  role: string;
}

const PUBLIC_BASE_URL = 'https://dash.example';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const base = Date.now() - 2 * HOUR;
/** The end of every history range asked: fixed, so two viewers' answers can be compared. */
const until = iso(Date.now() - HOUR);
let clock = base;
/** A record with a unique timestamp and a soc that identifies it. */
function aRecord(soc: number): TelemetryRecordBody {
  clock += 1000;
  return { ts: iso(clock), metrics: { soc, voltage: 13.1 } };
}

/** The parts of a problem that must not tell one refusal from another (requestId and instance differ per call). */
function comparable(problem: Problem): Omit<Problem, 'requestId' | 'instance'> {
  const { requestId: _requestId, instance: _instance, ...rest } = problem;
  return rest;
}

const streams: SseStream[] = [];
afterEach(() => {
  for (const opened of streams.splice(0)) opened.close();
});

describe('device sharing', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let owner: SignedIn;
  let viewer: SignedIn;
  let installer: SignedIn;
  let stranger: SignedIn;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createTestApp({ ...ADMIN_SETTINGS, SMTP_URL: sink.url, PUBLIC_BASE_URL, STREAM_HEARTBEAT_MS: '300' });
    [owner, viewer, installer, stranger] = await Promise.all([aCustomer(t), aCustomer(t), aCustomer(t), aCustomer(t)]);
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const share = (who: Who | undefined, deviceId: string, body: ShareBody) => t.api.POST('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId } }, body, headers: who?.headers });
  const sharesOf = (who: Who, deviceId: string) => t.api.GET('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId } }, headers: who.headers });
  const revoke = (who: Who, deviceId: string, shareId: string) => t.api.DELETE('/api/v1/user/devices/{deviceId}/shares/{shareId}', { params: { path: { deviceId, shareId } }, headers: who.headers });

  async function shareRows(deviceId: string): Promise<ShareRow[]> {
    return (await t.db.query<ShareRow>('SELECT share_id, device_id, granted_by, email, user_id, role FROM device_shares WHERE device_id = $1 ORDER BY email', [deviceId])).rows;
  }

  async function aGateway(who: SignedIn = owner): Promise<Gateway> {
    const { body, registered } = await aClaimedDevice(t, who);
    return { deviceId: body.deviceId, accessToken: registered.accessToken };
  }

  async function shared(gateway: Gateway, who: SignedIn, role: ShareBody['role']): Promise<string> {
    const { data, response } = await share(owner, gateway.deviceId, { email: who.email, role });
    expect(response.status).toBe(201);
    return data!.shareId;
  }

  async function sent(gateway: Gateway, records: TelemetryRecordBody[]): Promise<void> {
    const { response } = await ingest(t.api, gateway.accessToken, records);
    expect(response.status).toBe(200);
  }

  const device = (who: Who, deviceId: string) => t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, headers: who.headers });
  const history = (who: Who, deviceId: string) =>
    t.api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', { params: { path: { deviceId }, query: { from: iso(base), to: until, bucket: 'raw' } }, headers: who.headers });
  const otaHistory = (who: Who, deviceId: string) => t.api.GET('/api/v1/dashboard/devices/{deviceId}/ota/history', { params: { path: { deviceId } }, headers: who.headers });
  const config = (who: Who, deviceId: string) => t.api.GET('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, headers: who.headers });
  const patchConfig = (who: Who, deviceId: string, telemetryIntervalSec: number) =>
    t.api.PATCH('/api/v1/dashboard/devices/{deviceId}/config', { params: { path: { deviceId } }, body: { telemetryIntervalSec }, headers: who.headers });
  const rules = (who: Who, deviceId: string) => t.api.GET('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId } }, headers: who.headers });
  const SOC_NOW = { ruleId: 'soc-now', metric: 'soc', op: 'below' as const, threshold: 20, clearAt: 25, forSec: 0, enabled: true };
  const putRules = (who: Who, deviceId: string, threshold = 20) =>
    t.api.PUT('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId } }, body: { rules: [{ ...SOC_NOW, threshold }] }, headers: who.headers });
  const deleteRules = (who: Who, deviceId: string) => t.api.DELETE('/api/v1/dashboard/devices/{deviceId}/alert-rules', { params: { path: { deviceId } }, headers: who.headers });
  const relabel = (who: Who, deviceId: string, name: string) => t.api.PATCH('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId } }, body: { name }, headers: who.headers });
  const events = (who: Who, deviceId: string) => t.api.GET('/api/v1/dashboard/events', { params: { query: { deviceId } }, headers: who.headers });
  const alerts = (who: Who, deviceId: string) => t.api.GET('/api/v1/dashboard/alerts', { params: { query: { deviceId } }, headers: who.headers });
  const acknowledge = (who: Who, alertId: string) => t.api.POST('/api/v1/dashboard/alerts/{alertId}/acknowledge', { params: { path: { alertId } }, headers: who.headers });
  const listed = async (who: Who) => (await t.api.GET('/api/v1/dashboard/devices', { params: { query: { limit: 100 } }, headers: who.headers })).data!.items;
  const owned = async (who: Who) => (await t.api.GET('/api/v1/user/devices', { params: { query: { limit: 100 } }, headers: who.headers })).data!.items.map((item) => item.deviceId);

  async function stream(who: SignedIn, query: Record<string, string> = {}): Promise<SseStream> {
    const url = new URL('/api/v1/dashboard/stream', t.baseUrl);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    const opened = await openSse(url.toString(), { authorization: `Bearer ${who.accessToken}` });
    streams.push(opened);
    return opened;
  }
  const telemetryOf = (deviceId: string, soc: number) => (message: SseMessage) =>
    message.event === 'telemetry' && dataOf<{ deviceId: string; metrics: { soc: number } }>(message).deviceId === deviceId && dataOf<{ metrics: { soc: number } }>(message).metrics.soc === soc;
  const eventOf = (type: string, deviceId: string) => (message: SseMessage) => message.event === type && dataOf<EventData>(message).deviceId === deviceId;

  /** A device `who` claims, once its device.claimed event is on `live`: whatever came to that stream before the claim, it has read. */
  async function aClaimSeenOn(live: SseStream, who: SignedIn): Promise<void> {
    const { deviceId } = await aGateway(who);
    await live.next(eventOf('device.claimed', deviceId));
  }

  describe('managing shares', () => {
    it('the owner shares with an account: 201 with the share, bound to that account at once', async () => {
      const gateway = await aGateway();
      const { data, response } = await share(owner, gateway.deviceId, { email: `  ${viewer.email.toUpperCase()} `, role: 'viewer' });
      expect(response.status).toBe(201);
      expect(data).toEqual({ shareId: expect.stringMatching(UUID), deviceId: gateway.deviceId, email: viewer.email, organizationId: null, role: 'viewer', createdAt: expect.any(String) });
      expect(await shareRows(gateway.deviceId)).toEqual([{ share_id: data!.shareId, device_id: gateway.deviceId, granted_by: owner.userId, email: viewer.email, user_id: viewer.userId, role: 'viewer' }]);
      expect((await sharesOf(owner, gateway.deviceId)).data).toEqual({ items: [data], nextCursor: null });
    });

    it('answers the same for an address with an account and one without: no enumeration', async () => {
      const gateway = await aGateway();
      const withAccount = await share(owner, gateway.deviceId, { email: viewer.email, role: 'viewer' });
      const nobody = `nobody-${randomBytes(4).toString('hex')}@example.com`;
      const without = await share(owner, gateway.deviceId, { email: nobody, role: 'viewer' });
      expect(without.response.status).toBe(withAccount.response.status);
      expect(Object.keys(without.data!).sort()).toEqual(Object.keys(withAccount.data!).sort());
      expect({ ...without.data, shareId: '', email: '', createdAt: '' }).toEqual({ ...withAccount.data, shareId: '', email: '', createdAt: '' });
      const { data: list } = await sharesOf(owner, gateway.deviceId);
      expect(list!.items.map((item) => Object.keys(item).sort())).toEqual([Object.keys(withAccount.data!).sort(), Object.keys(withAccount.data!).sort()]);
      expect((await shareRows(gateway.deviceId)).find((row) => row.email === nobody)?.user_id).toBeNull();
    });

    it('sharing again with the same address changes the role: 200, the same share', async () => {
      const gateway = await aGateway();
      const first = await share(owner, gateway.deviceId, { email: installer.email, role: 'viewer' });
      const again = await share(owner, gateway.deviceId, { email: installer.email, role: 'installer' });
      expect(again.response.status).toBe(200);
      expect(again.data).toEqual({ ...first.data, role: 'installer' });
      expect(await shareRows(gateway.deviceId)).toEqual([expect.objectContaining({ share_id: first.data!.shareId, role: 'installer', user_id: installer.userId })]);
    });

    it('lists shares oldest first, a page at a time; a cursor it did not give is a 400', async () => {
      const gateway = await aGateway();
      const emails = [viewer.email, installer.email, `later-${randomBytes(4).toString('hex')}@example.com`];
      for (const email of emails) expect((await share(owner, gateway.deviceId, { email, role: 'viewer' })).response.status).toBe(201);
      const first = await t.api.GET('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: gateway.deviceId }, query: { limit: 2 } }, headers: owner.headers });
      expect(first.data!.items.map((item) => item.email)).toEqual(emails.slice(0, 2));
      const second = await t.api.GET('/api/v1/user/devices/{deviceId}/shares', {
        params: { path: { deviceId: gateway.deviceId }, query: { limit: 2, cursor: first.data!.nextCursor! } },
        headers: owner.headers,
      });
      expect(second.data).toEqual({ items: [expect.objectContaining({ email: emails[2] })], nextCursor: null });
      const bad = await t.api.GET('/api/v1/user/devices/{deviceId}/shares', { params: { path: { deviceId: gateway.deviceId }, query: { cursor: 'nonsense' } }, headers: owner.headers });
      expect(fieldsOf(expectProblem(bad, 400, 'VALIDATION_FAILED'))).toEqual(['cursor']);
    });

    it('bad input is a 400 problem naming the field and changes nothing', async () => {
      const gateway = await aGateway();
      await shared(gateway, viewer, 'viewer');
      const before = await shareRows(gateway.deviceId);
      expect(fieldsOf(expectProblem(await share(owner, gateway.deviceId, { email: stranger.email, role: 'admin' as ShareBody['role'] }), 400, 'VALIDATION_FAILED'))).toEqual(['role']);
      expect(fieldsOf(expectProblem(await share(owner, gateway.deviceId, { email: 'not-an-address', role: 'viewer' }), 400, 'VALIDATION_FAILED'))).toEqual(['email']);
      expect(fieldsOf(expectProblem(await share(owner, gateway.deviceId, { email: owner.email, role: 'viewer' }), 400, 'VALIDATION_FAILED'))).toEqual(['email']);
      expect([...new Set(fieldsOf(expectProblem(await share(owner, gateway.deviceId, {} as ShareBody), 400, 'VALIDATION_FAILED')))].sort()).toEqual(['email', 'role']);
      expectProblem(await share(owner, 'no spaces', { email: stranger.email, role: 'viewer' }), 400, 'VALIDATION_FAILED');
      expectProblem(await revoke(owner, gateway.deviceId, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
      expect(await shareRows(gateway.deviceId)).toEqual(before);
    });

    it('only the owner manages shares: an unknown device, someone else’s, or one shared with you answer the same 404', async () => {
      const gateway = await aGateway();
      const shareId = await shared(gateway, installer, 'installer');
      const before = await shareRows(gateway.deviceId);
      const unknown = expectProblem(await share(owner, 'gw-does-not-exist', { email: stranger.email, role: 'viewer' }), 404, 'NOT_FOUND');
      const notTheirs = expectProblem(await share(stranger, gateway.deviceId, { email: viewer.email, role: 'viewer' }), 404, 'NOT_FOUND');
      const sharee = expectProblem(await share(installer, gateway.deviceId, { email: viewer.email, role: 'viewer' }), 404, 'NOT_FOUND');
      expect(comparable(notTheirs)).toEqual(comparable(unknown));
      expect(comparable(sharee)).toEqual(comparable(unknown));
      expectProblem(await sharesOf(installer, gateway.deviceId), 404, 'NOT_FOUND');
      expectProblem(await sharesOf(stranger, gateway.deviceId), 404, 'NOT_FOUND');
      expectProblem(await revoke(installer, gateway.deviceId, shareId), 404, 'NOT_FOUND');
      expectProblem(await revoke(owner, gateway.deviceId, '00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND');
      const admin = await anAdmin(t);
      expectProblem(await share(admin, gateway.deviceId, { email: viewer.email, role: 'viewer' }), 404, 'NOT_FOUND');
      expect(await shareRows(gateway.deviceId)).toEqual(before);
    });

    it('refuses API keys, even write keys', async () => {
      const gateway = await aGateway();
      const { data } = await t.api.POST('/api/v1/user/api-keys', { body: { name: 'script', scope: 'write' }, headers: owner.headers });
      const key = { headers: bearer(data!.key) };
      expectProblem(await share(key, gateway.deviceId, { email: viewer.email, role: 'viewer' }), 403, 'API_KEY_SCOPE');
      expectProblem(await sharesOf(key, gateway.deviceId), 403, 'API_KEY_SCOPE');
      expect(await shareRows(gateway.deviceId)).toEqual([]);
    });
  });

  describe('what a viewer and an installer may do', () => {
    let gateway: Gateway;
    let alertId: string;

    beforeAll(async () => {
      gateway = await aGateway();
      expect((await putRules(owner, gateway.deviceId)).response.status).toBe(200);
      await sent(gateway, [aRecord(50), aRecord(10)]);
      const { data } = await eventually(async () => {
        const answer = await alerts(owner, gateway.deviceId);
        expect(answer.data!.items).toHaveLength(1);
        return answer;
      });
      alertId = data!.items[0].alertId;
      await shared(gateway, viewer, 'viewer');
      await shared(gateway, installer, 'installer');
    });

    it('both see the device in the dashboard list and detail, with their access; not among their owned devices', async () => {
      expect((await listed(viewer)).find((item) => item.deviceId === gateway.deviceId)?.access).toBe('viewer');
      expect((await listed(installer)).find((item) => item.deviceId === gateway.deviceId)?.access).toBe('installer');
      expect((await listed(owner)).find((item) => item.deviceId === gateway.deviceId)?.access).toBe('owner');
      expect((await listed(stranger)).map((item) => item.deviceId)).not.toContain(gateway.deviceId);
      const { data, response } = await device(viewer, gateway.deviceId);
      expect(response.status).toBe(200);
      expect(data).toMatchObject({ deviceId: gateway.deviceId, access: 'viewer', latestMetrics: expect.arrayContaining([expect.objectContaining({ metric: 'soc', value: 10 })]) });
      expect(data).not.toHaveProperty('owner');
      expect(await owned(viewer)).not.toContain(gateway.deviceId);
      expect(await owned(installer)).not.toContain(gateway.deviceId);
      expectProblem(await device(stranger, gateway.deviceId), 404, 'NOT_FOUND');
    });

    it('both read history, OTA history, configuration, events, alerts and alert rules as the owner does', async () => {
      for (const who of [viewer, installer]) {
        const raw = await history(who, gateway.deviceId);
        expect(raw.response.status).toBe(200);
        expect((await history(owner, gateway.deviceId)).data).toEqual(raw.data);
        expect((await otaHistory(who, gateway.deviceId)).response.status).toBe(200);
        const got = await config(who, gateway.deviceId);
        expect(got.response.status).toBe(200);
        expect(got.data).toEqual((await config(owner, gateway.deviceId)).data);
        const log = await events(who, gateway.deviceId);
        expect(log.data!.items.map((item) => item.type)).toEqual(expect.arrayContaining(['device.claimed', 'alert.opened']));
        expect(log.data).toEqual((await events(owner, gateway.deviceId)).data);
        expect((await alerts(who, gateway.deviceId)).data!.items.map((item) => item.alertId)).toEqual([alertId]);
        expect((await rules(who, gateway.deviceId)).data).toEqual({ rules: [SOC_NOW], inherited: false });
      }
      for (const refused of [history(stranger, gateway.deviceId), otaHistory(stranger, gateway.deviceId), config(stranger, gateway.deviceId), rules(stranger, gateway.deviceId)]) {
        expectProblem(await refused, 404, 'NOT_FOUND');
      }
      expect((await events(stranger, gateway.deviceId)).data!.items).toEqual([]);
      expect((await alerts(stranger, gateway.deviceId)).data!.items).toEqual([]);
    });

    it('a viewer may change nothing: 403 SHARE_ROLE on configuration, alert rules, names and acknowledgements, and nothing changes', async () => {
      const before = (await t.db.query('SELECT config_overrides, config_revision, name FROM devices WHERE device_id = $1', [gateway.deviceId])).rows;
      const rulesBefore = (await rules(owner, gateway.deviceId)).data;
      expectProblem(await patchConfig(viewer, gateway.deviceId, 120), 403, 'SHARE_ROLE');
      expectProblem(await putRules(viewer, gateway.deviceId, 30), 403, 'SHARE_ROLE');
      expectProblem(await deleteRules(viewer, gateway.deviceId), 403, 'SHARE_ROLE');
      expectProblem(await relabel(viewer, gateway.deviceId, 'Mine now'), 403, 'SHARE_ROLE');
      expectProblem(await acknowledge(viewer, alertId), 403, 'SHARE_ROLE');
      expect((await t.db.query('SELECT config_overrides, config_revision, name FROM devices WHERE device_id = $1', [gateway.deviceId])).rows).toEqual(before);
      expect((await rules(owner, gateway.deviceId)).data).toEqual(rulesBefore);
      expect((await alerts(owner, gateway.deviceId)).data!.items[0]).toMatchObject({ state: 'open', acknowledgedAt: null });
      // Someone who cannot see the device still gets the 404 of one that does not exist.
      expectProblem(await patchConfig(stranger, gateway.deviceId, 120), 404, 'NOT_FOUND');
      expectProblem(await relabel(stranger, gateway.deviceId, 'Mine now'), 404, 'NOT_FOUND');
      expectProblem(await acknowledge(stranger, alertId), 404, 'NOT_FOUND');
    });

    it('an installer changes configuration, alert rules and names, and acknowledges alerts', async () => {
      expect((await acknowledge(installer, alertId)).data).toMatchObject({ alertId, state: 'acknowledged' });
      const patched = await patchConfig(installer, gateway.deviceId, 120);
      expect(patched.response.status).toBe(200);
      expect(patched.data!.overrides).toEqual({ telemetryIntervalSec: 120 });
      expect((await putRules(installer, gateway.deviceId, 15)).response.status).toBe(200);
      expect((await rules(owner, gateway.deviceId)).data).toEqual({ rules: [{ ...SOC_NOW, threshold: 15 }], inherited: false });
      expect((await deleteRules(installer, gateway.deviceId)).data!.inherited).toBe(true);
      const named = await relabel(installer, gateway.deviceId, 'Site 7 rack');
      expect(named.response.status).toBe(200);
      expect(named.data).toMatchObject({ name: 'Site 7 rack', access: 'installer' });
      expect((await device(owner, gateway.deviceId)).data!.name).toBe('Site 7 rack');
    });

    it('neither may release, open re-registration or share further', async () => {
      for (const who of [viewer, installer]) {
        expectProblem(await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: gateway.deviceId } }, headers: who.headers }), 404, 'NOT_FOUND');
        expectProblem(await t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', { params: { path: { deviceId: gateway.deviceId } }, headers: who.headers }), 404, 'NOT_FOUND');
        expectProblem(await share(who, gateway.deviceId, { email: stranger.email, role: 'viewer' }), 404, 'NOT_FOUND');
      }
      expect((await t.db.query('SELECT owner_id FROM devices WHERE device_id = $1', [gateway.deviceId])).rows).toEqual([{ owner_id: owner.userId }]);
    });
  });

  describe('the stream', () => {
    it('a sharee’s stream gets the device’s telemetry and events live, may narrow to it, and replays its events', async () => {
      const gateway = await aGateway();
      await shared(gateway, viewer, 'viewer');
      const all = await stream(viewer);
      const narrowed = await stream(viewer, { deviceId: gateway.deviceId });
      expect([all.status, narrowed.status]).toEqual([200, 200]);
      const refused = await stream(stranger, { deviceId: gateway.deviceId });
      expect(refused.status).toBe(404);

      await sent(gateway, [aRecord(61)]);
      await all.next(telemetryOf(gateway.deviceId, 61));
      await narrowed.next(telemetryOf(gateway.deviceId, 61));

      const { data: log } = await events(owner, gateway.deviceId);
      const claimedId = log!.items.find((item) => item.type === 'device.claimed')!.id;
      expect((await putRules(owner, gateway.deviceId)).response.status).toBe(200);
      await sent(gateway, [aRecord(5)]);
      const opened = await all.next(eventOf('alert.opened', gateway.deviceId));
      const replayed = await stream(viewer, { lastEventId: claimedId });
      expect(replayed.status).toBe(200);
      expect((await replayed.next(eventOf('alert.opened', gateway.deviceId))).id).toBe(opened.id);
    });

    it('a share bound while the stream is open starts delivering; a revocation stops it at once', async () => {
      const gateway = await aGateway();
      const watching = await stream(installer);
      const ownerStream = await stream(owner, { deviceId: gateway.deviceId });
      const shareId = await shared(gateway, installer, 'installer');
      await eventually(async () => {
        await sent(gateway, [aRecord(62)]);
        await watching.next(telemetryOf(gateway.deviceId, 62), 300);
      });

      expect((await revoke(owner, gateway.deviceId, shareId)).response.status).toBe(204);
      await sent(gateway, [aRecord(63)]);
      await ownerStream.next(telemetryOf(gateway.deviceId, 63));
      await aClaimSeenOn(watching, installer);
      expect(watching.messages.filter(telemetryOf(gateway.deviceId, 63))).toEqual([]);
    });
  });

  describe('revocation and release', () => {
    it('a revocation ends every read at once', async () => {
      const gateway = await aGateway();
      const shareId = await shared(gateway, viewer, 'viewer');
      expect((await device(viewer, gateway.deviceId)).response.status).toBe(200);
      expect((await revoke(owner, gateway.deviceId, shareId)).response.status).toBe(204);
      expect(await shareRows(gateway.deviceId)).toEqual([]);
      expectProblem(await device(viewer, gateway.deviceId), 404, 'NOT_FOUND');
      expectProblem(await history(viewer, gateway.deviceId), 404, 'NOT_FOUND');
      expectProblem(await config(viewer, gateway.deviceId), 404, 'NOT_FOUND');
      expect((await events(viewer, gateway.deviceId)).data!.items).toEqual([]);
      expect((await listed(viewer)).map((item) => item.deviceId)).not.toContain(gateway.deviceId);
      expect((await stream(viewer, { deviceId: gateway.deviceId })).status).toBe(404);
    });

    it('a release ends every share: rows gone, and the next owner’s device is not the old sharees’', async () => {
      const gateway = await aGateway();
      await shared(gateway, viewer, 'viewer');
      await shared(gateway, installer, 'installer');
      const watching = await stream(viewer);
      expect((await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: gateway.deviceId } }, headers: owner.headers })).response.status).toBe(204);
      expect(await shareRows(gateway.deviceId)).toEqual([]);
      for (const who of [viewer, installer]) {
        expectProblem(await device(who, gateway.deviceId), 404, 'NOT_FOUND');
        expectProblem(await history(who, gateway.deviceId), 404, 'NOT_FOUND');
        expectProblem(await patchConfig(who, gateway.deviceId, 120), 404, 'NOT_FOUND');
        expect((await events(who, gateway.deviceId)).data!.items).toEqual([]);
        expect((await alerts(who, gateway.deviceId)).data!.items).toEqual([]);
      }
      await sent(gateway, [aRecord(64)]);
      await aClaimSeenOn(watching, viewer);
      expect(watching.messages.filter(telemetryOf(gateway.deviceId, 64))).toEqual([]);
    });

    it('a share whose granter no longer owns the device counts for nothing, even if its row survived', async () => {
      const gateway = await aGateway();
      await shared(gateway, viewer, 'viewer');
      // An ownership change that bypasses the release (an administrator's transfer, say).
      await t.db.query('UPDATE devices SET owner_id = $1 WHERE device_id = $2', [stranger.userId, gateway.deviceId]);
      expect(await shareRows(gateway.deviceId)).toHaveLength(1);
      expectProblem(await device(viewer, gateway.deviceId), 404, 'NOT_FOUND');
      expect((await listed(viewer)).map((item) => item.deviceId)).not.toContain(gateway.deviceId);
      expect((await events(viewer, gateway.deviceId)).data!.items).toEqual([]);
    });
  });

  describe('an address without an account', () => {
    it('the share waits for the sign-up, and counts once the address is verified', async () => {
      const gateway = await aGateway();
      const email = `invitee-${randomBytes(4).toString('hex')}@example.com`;
      expect((await share(owner, gateway.deviceId, { email, role: 'viewer' })).response.status).toBe(201);
      expect(await shareRows(gateway.deviceId)).toEqual([expect.objectContaining({ email, user_id: null })]);

      expect((await t.api.POST('/api/v1/auth/signup', { body: { email, password: CUSTOMER_PASSWORD } })).response.status).toBe(201);
      const { data: tokens } = await t.api.POST('/api/v1/auth/login', { body: { email, password: CUSTOMER_PASSWORD } });
      const invitee = { headers: bearer(tokens!.accessToken) };
      // Signed up but not verified: the share does not count yet.
      expect(await shareRows(gateway.deviceId)).toEqual([expect.objectContaining({ email, user_id: null })]);
      expectProblem(await device(invitee, gateway.deviceId), 404, 'NOT_FOUND');

      const mail = await sink.waitForMessage(email);
      const token = /verify-email\?token=(\S+)/.exec(mail.text)![1];
      expect((await t.api.POST('/api/v1/auth/verify-email', { body: { token: decodeURIComponent(token) } })).response.status).toBe(200);
      const { data: me } = await t.api.GET('/api/v1/users/me', { headers: invitee.headers });
      expect(await shareRows(gateway.deviceId)).toEqual([expect.objectContaining({ email, user_id: me!.userId })]);
      const { data, response } = await device(invitee, gateway.deviceId);
      expect(response.status).toBe(200);
      expect(data!.access).toBe('viewer');
    });
  });
});
