import { randomBytes } from 'node:crypto';
import { loadEnv } from '../../src/config/env.js';
import type { components, paths } from '@device-cloud/client';
import { aClaimCode, aDeviceId, aLegacyRegistration, bearer, getMe, registerDevice, type RegisterBody } from '../support/builders.js';
import { ADMIN_SETTINGS, aClaimedDevice, aCustomer, anAdmin, claim, ownedDeviceRow, type SignedIn } from '../support/claim-fixtures.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';
import { expectProblem, fieldsOf, type Problem } from '../support/problems.js';
import { HOUR, MINUTE, iso } from '../support/telemetry.js';

type EventBody = components['schemas']['OtaEventRequest'];
type EventType = EventBody['type'];
type PublishBody = components['schemas']['PublishFirmwareRequest'];
type Release = components['schemas']['FirmwareReleaseResponse'];
type Counts = components['schemas']['ReleaseCountsResponse'];
type HistoryQuery = NonNullable<paths['/api/v1/dashboard/devices/{deviceId}/ota/history']['get']['parameters']['query']>;
type HistoryItem = components['schemas']['OtaHistoryItemResponse'];
type Headers = { authorization: string };

interface Gateway {
  deviceId: string;
  hardwareId: string;
  accessToken: string;
}

interface EventRow {
  id: string;
  ts: Date;
  type: string;
  from_version: string | null;
  to_version: string | null;
  progress_pct: number | null;
  error_code: string | null;
  message: string | null;
  received_at: Date;
}

const NO_DEVICES: Counts = { offered: 0, downloading: 0, installing: 0, installed: 0, failed: 0, rolledBack: 0, stalled: 0, heldBack: 0 };

/** An event of an update from 0.1.3 (what legacy gateways run) to `toVersion`, at `atMs`. */
function anEvent(type: EventType, atMs: number, overrides: Partial<EventBody> = {}): EventBody {
  return { ts: iso(atMs), type, fromVersion: '0.1.3', toVersion: '0.1.50', ...overrides };
}

const aHardwareId = () => `hw-${randomBytes(4).toString('hex')}`;

/** The parts of a problem that must not tell one refusal from another (requestId and instance differ per call). */
function comparable(problem: Problem): Omit<Problem, 'requestId' | 'instance'> {
  const { requestId: _requestId, instance: _instance, ...rest } = problem;
  return rest;
}

/** Everything one app offers the tests of this file. */
function otaHelpers(app: () => TestApp, admin: () => SignedIn) {
  const t = () => app();

  const report = (gateway: Gateway, events: EventBody[]) => t().api.POST('/api/v1/ota/events', { body: { events }, headers: bearer(gateway.accessToken) });

  /** Reports and fails the test unless the answer is 200. */
  async function reported(gateway: Gateway, events: EventBody[]) {
    const { data, response } = await report(gateway, events);
    if (response.status !== 200 || !data) throw new Error(`reporting ${events.length} events answered ${response.status}`);
    return data;
  }

  async function aGateway(overrides: Partial<RegisterBody> = {}): Promise<Gateway> {
    const body = aLegacyRegistration(overrides);
    const registered = await registerDevice(t().api, body);
    return { deviceId: body.deviceId, hardwareId: body.hardwareId, accessToken: registered.accessToken };
  }

  async function publish(overrides: Partial<PublishBody>): Promise<Release> {
    const version = overrides.version ?? '0.1.50';
    const body = { version, url: `https://fw.example.com/${version}.bin`, sha256: randomBytes(32).toString('hex'), size: 4096, ...overrides };
    const { data, response } = await t().api.POST('/api/v1/admin/firmware', { body, headers: admin().headers });
    if (response.status !== 201 || !data) throw new Error(`publishing ${version} answered ${response.status}`);
    return data;
  }

  async function status(releaseId: string) {
    const { data, response } = await t().api.GET('/api/v1/admin/firmware/{id}/status', { params: { path: { id: releaseId } }, headers: admin().headers });
    if (response.status !== 200 || !data) throw new Error(`status of ${releaseId} answered ${response.status}`);
    return data;
  }

  async function offered(gateway: Gateway): Promise<string | null> {
    const { data, response } = await t().api.GET('/api/v1/ota/latest', { headers: bearer(gateway.accessToken) });
    expect(response.status).toBe(200);
    return data!.firmware?.version ?? null;
  }

  async function eventRows(deviceId: string): Promise<EventRow[]> {
    const { rows } = await t().db.query<EventRow>(
      'SELECT id::text, ts, type, from_version, to_version, progress_pct, error_code, message, received_at FROM ota_events WHERE device_id = $1 ORDER BY ts, type',
      [deviceId],
    );
    return rows;
  }

  async function firmwareOf(gateway: Gateway): Promise<string> {
    const { data, response } = await getMe(t().api, gateway.accessToken);
    expect(response.status).toBe(200);
    return data!.firmwareVersion;
  }

  return { report, reported, aGateway, publish, status, offered, eventRows, firmwareOf };
}

describe('OTA events', () => {
  let t: TestApp;
  let admin: SignedIn;
  const { report, reported, aGateway, publish, status, offered, eventRows, firmwareOf } = otaHelpers(
    () => t,
    () => admin,
  );

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  async function eventCount(): Promise<number> {
    const { rows } = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM ota_events');
    return rows[0].n;
  }

  describe('POST /api/v1/ota/events', () => {
    it('200 after the commit: every event stored with every field, the gateway seen', async () => {
      const gateway = await aGateway();
      const now = Date.now();
      const events: EventBody[] = [
        anEvent('check', now - 5 * MINUTE, { toVersion: undefined }),
        anEvent('download_started', now - 4 * MINUTE),
        anEvent('download_progress', now - 3 * MINUTE, { progressPct: 40 }),
        anEvent('verify_failed', now - 2 * MINUTE, { errorCode: 'E_SHA_MISMATCH', message: 'sha256 of the image differs' }),
      ];

      const { data, response } = await report(gateway, events);

      expect(response.status).toBe(200);
      expect(data).toEqual({ accepted: 4, duplicates: 0, coalesced: 0, rejected: [] });
      const rows = await eventRows(gateway.deviceId);
      expect(rows.map(({ id: _id, received_at: _receivedAt, ...row }) => row)).toEqual([
        { ts: new Date(events[0].ts), type: 'check', from_version: '0.1.3', to_version: null, progress_pct: null, error_code: null, message: null },
        { ts: new Date(events[1].ts), type: 'download_started', from_version: '0.1.3', to_version: '0.1.50', progress_pct: null, error_code: null, message: null },
        { ts: new Date(events[2].ts), type: 'download_progress', from_version: '0.1.3', to_version: '0.1.50', progress_pct: 40, error_code: null, message: null },
        {
          ts: new Date(events[3].ts),
          type: 'verify_failed',
          from_version: '0.1.3',
          to_version: '0.1.50',
          progress_pct: null,
          error_code: 'E_SHA_MISMATCH',
          message: 'sha256 of the image differs',
        },
      ]);
      for (const row of rows) {
        expect(row.received_at.getTime()).toBeGreaterThanOrEqual(now - 1000);
        expect(row.received_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
      }
      expect((await ownedDeviceRow(t.db, gateway.deviceId))!.last_seen_at!.getTime()).toBeGreaterThanOrEqual(now - 1000);
    });

    it('the same batch again: accepted 0, duplicates n, nothing new stored', async () => {
      const gateway = await aGateway();
      const now = Date.now();
      const events = [anEvent('download_started', now - 3 * MINUTE), anEvent('download_completed', now - 2 * MINUTE), anEvent('install_started', now - MINUTE)];
      await reported(gateway, events);
      const before = await eventRows(gateway.deviceId);

      const retry = await reported(gateway, events);

      expect(retry).toEqual({ accepted: 0, duplicates: 3, coalesced: 0, rejected: [] });
      expect(await eventRows(gateway.deviceId)).toEqual(before);
    });

    it('idempotency is on (device, ts, type): a batch overlapping a stored one stores only what is new; another device may send the same events', async () => {
      const [gateway, other] = [await aGateway(), await aGateway()];
      const now = Date.now();
      const first = [anEvent('download_started', now - 3 * MINUTE), anEvent('download_completed', now - 2 * MINUTE)];
      await reported(gateway, first);

      const overlapping = await reported(gateway, [
        ...first.map((event) => ({ ...event, message: 'resent with another message' })),
        anEvent('install_started', now - 2 * MINUTE),
      ]);
      const sameByOther = await reported(other, first);

      expect(overlapping).toEqual({ accepted: 1, duplicates: 2, coalesced: 0, rejected: [] });
      expect(sameByOther).toEqual({ accepted: 2, duplicates: 0, coalesced: 0, rejected: [] });
      const rows = await eventRows(gateway.deviceId);
      expect(rows.map((row) => [row.type, row.message])).toEqual([
        ['download_started', null],
        ['download_completed', null],
        ['install_started', null],
      ]);
    });

    it('the same batch sent twice at once: stored once between the two answers', async () => {
      const gateway = await aGateway();
      const now = Date.now();
      const events = Array.from({ length: 20 }, (_, i) => anEvent('download_progress', now - HOUR + i * MINUTE, { progressPct: i * 5 }));

      const answers = await Promise.all([reported(gateway, events), reported(gateway, events)]);

      expect(answers.map((answer) => answer.accepted).sort()).toEqual([0, 20]);
      expect(answers.map((answer) => answer.duplicates).sort()).toEqual([0, 20]);
      expect(await eventRows(gateway.deviceId)).toHaveLength(20);
    });

    it('the same (ts, type) twice in one batch is stored once', async () => {
      const gateway = await aGateway();
      const event = anEvent('install_started', Date.now() - MINUTE);

      expect(await reported(gateway, [event, event])).toEqual({ accepted: 1, duplicates: 1, coalesced: 0, rejected: [] });
      expect(await eventRows(gateway.deviceId)).toHaveLength(1);
    });

    it('download_progress less than 30 s after a kept or stored one of the same toVersion is coalesced, not stored', async () => {
      const gateway = await aGateway();
      const start = Date.now() - 10 * MINUTE;
      const progress = (seconds: number, toVersion = '0.1.50') => anEvent('download_progress', start + seconds * 1000, { toVersion, progressPct: Math.min(100, Math.round(seconds)) });
      const batch = [progress(0), anEvent('download_completed', start + 1000), progress(10), progress(29.999), progress(30), progress(45), progress(61), progress(5, '0.2.0')];

      const first = await reported(gateway, batch);

      expect(first).toEqual({ accepted: 5, duplicates: 0, coalesced: 3, rejected: [] });
      const stored = async () =>
        (await eventRows(gateway.deviceId)).filter((row) => row.type === 'download_progress').map((row) => [row.to_version, (row.ts.getTime() - start) / 1000]);
      expect(await stored()).toEqual([
        ['0.1.50', 0],
        ['0.2.0', 5],
        ['0.1.50', 30],
        ['0.1.50', 61],
      ]);

      // Retried: the same events coalesce again and nothing is stored twice.
      expect(await reported(gateway, batch)).toEqual({ accepted: 0, duplicates: 5, coalesced: 3, rejected: [] });
      // A later batch is measured against what is stored: 9 s after the stored 61 s is coalesced, 35 s after it is kept.
      expect(await reported(gateway, [progress(70)])).toEqual({ accepted: 0, duplicates: 0, coalesced: 1, rejected: [] });
      expect(await reported(gateway, [progress(96)])).toEqual({ accepted: 1, duplicates: 0, coalesced: 0, rejected: [] });
      expect((await stored()).map(([, seconds]) => seconds)).toEqual([0, 5, 30, 61, 96]);
    });

    it('an event more than 5 minutes ahead is rejected on its own (TS_IN_FUTURE); the rest is stored', async () => {
      const gateway = await aGateway();
      const now = Date.now();
      const events = [anEvent('download_started', now + 10 * MINUTE), anEvent('check', now - MINUTE), anEvent('download_completed', now + 4 * MINUTE), anEvent('install_started', now + HOUR)];

      const { data, response } = await report(gateway, events);

      expect(response.status).toBe(200);
      expect(data).toEqual({
        accepted: 2,
        duplicates: 0,
        coalesced: 0,
        rejected: [
          { index: 0, code: 'TS_IN_FUTURE' },
          { index: 3, code: 'TS_IN_FUTURE' },
        ],
      });
      expect((await eventRows(gateway.deviceId)).map((row) => row.type)).toEqual(['check', 'download_completed']);
    });

    it('a batch of nothing but future events: 200, every one rejected, nothing stored', async () => {
      const gateway = await aGateway();

      const data = await reported(gateway, [anEvent('check', Date.now() + HOUR)]);

      expect(data).toEqual({ accepted: 0, duplicates: 0, coalesced: 0, rejected: [{ index: 0, code: 'TS_IN_FUTURE' }] });
      expect(await eventRows(gateway.deviceId)).toEqual([]);
    });

    it('100 events in one batch: all stored', async () => {
      const gateway = await aGateway();
      const start = Date.now() - HOUR;

      const data = await reported(gateway, Array.from({ length: 100 }, (_, i) => anEvent('check', start + i * 1000)));

      expect(data).toEqual({ accepted: 100, duplicates: 0, coalesced: 0, rejected: [] });
      expect(await eventRows(gateway.deviceId)).toHaveLength(100);
    });

    const valid = () => anEvent('download_started', Date.now() - MINUTE);
    it.each([
      ['no events', () => [], 'events'],
      ['101 events', () => Array.from({ length: 101 }, (_, i) => anEvent('check', Date.now() - HOUR + i * 1000)), 'events'],
      ['an unknown type', () => [valid(), { ...valid(), type: 'download_paused' as EventType }], 'events.1.type'],
      ['a bad fromVersion', () => [{ ...valid(), fromVersion: 'v0.1.3' }], 'events.0.fromVersion'],
      ['a bad toVersion', () => [{ ...valid(), toVersion: '0.1.x' }], 'events.0.toVersion'],
      ['progressPct 101', () => [{ ...valid(), type: 'download_progress', progressPct: 101 }], 'events.0.progressPct'],
      ['progressPct -1', () => [{ ...valid(), type: 'download_progress', progressPct: -1 }], 'events.0.progressPct'],
      ['progressPct 2.5', () => [{ ...valid(), type: 'download_progress', progressPct: 2.5 }], 'events.0.progressPct'],
      ['a ts without a zone', () => [{ ...valid(), ts: '2026-11-21T12:00:00' }], 'events.0.ts'],
      ['a ts that is no date', () => [{ ...valid(), ts: 'yesterday' }], 'events.0.ts'],
      ['no ts', () => [{ ...valid(), ts: undefined as unknown as string }], 'events.0.ts'],
      ['an empty errorCode', () => [{ ...valid(), errorCode: '' }], 'events.0.errorCode'],
      ['a message of 501 characters', () => [{ ...valid(), message: 'x'.repeat(501) }], 'events.0.message'],
      ['an unknown field', () => [{ ...valid(), battery: 80 } as EventBody], 'events.0.battery'],
    ] as Array<[string, () => EventBody[], string]>)('%s: 400 naming the field, nothing stored', async (_name, events, field) => {
      const gateway = await aGateway();
      const count = await eventCount();

      const problem = expectProblem(await report(gateway, events()), 400, 'VALIDATION_FAILED');

      expect(fieldsOf(problem)).toContain(field);
      expect(await eventCount()).toBe(count);
    });

    it('without a token: 401; with a customer token: 401; nothing stored', async () => {
      const count = await eventCount();

      expectProblem(await t.api.POST('/api/v1/ota/events', { body: { events: [valid()] } }), 401, 'UNAUTHORIZED');
      expectProblem(await t.api.POST('/api/v1/ota/events', { body: { events: [valid()] }, headers: admin.headers }), 401, 'UNAUTHORIZED');

      expect(await eventCount()).toBe(count);
    });
  });

  describe('the firmware version the gateway runs', () => {
    async function dashboardFirmware(gateway: Gateway): Promise<string> {
      const { data } = await t.api.GET('/api/v1/dashboard/devices/{deviceId}', { params: { path: { deviceId: gateway.deviceId } }, headers: admin.headers });
      return data!.firmwareVersion;
    }

    it.each(['install_succeeded', 'boot_confirmed'] as EventType[])('%s sets it to toVersion: /device/me and the dashboard show it', async (type) => {
      const gateway = await aGateway();
      const ts = Date.now() - MINUTE;

      await reported(gateway, [anEvent(type, ts, { fromVersion: '0.1.3', toVersion: '0.1.50' })]);

      expect(await firmwareOf(gateway)).toBe('0.1.50');
      expect(await dashboardFirmware(gateway)).toBe('0.1.50');
      const row = await t.db.query<{ firmware_version: string; firmware_reported_at: Date }>('SELECT firmware_version, firmware_reported_at FROM devices WHERE device_id = $1', [
        gateway.deviceId,
      ]);
      expect(row.rows[0]).toEqual({ firmware_version: '0.1.50', firmware_reported_at: new Date(iso(ts)) });
    });

    it('rolled_back sets it back to fromVersion', async () => {
      const gateway = await aGateway();
      const now = Date.now();
      await reported(gateway, [anEvent('install_succeeded', now - 2 * MINUTE)]);
      expect(await firmwareOf(gateway)).toBe('0.1.50');

      await reported(gateway, [anEvent('rolled_back', now - MINUTE, { fromVersion: '0.1.3', toVersion: '0.1.50' })]);

      expect(await firmwareOf(gateway)).toBe('0.1.3');
      expect(await dashboardFirmware(gateway)).toBe('0.1.3');
    });

    it('any other event\'s fromVersion is taken as the version it runs', async () => {
      const gateway = await aGateway();

      await reported(gateway, [anEvent('check', Date.now() - MINUTE, { fromVersion: '0.1.7', toVersion: undefined })]);

      expect(await firmwareOf(gateway)).toBe('0.1.7');
    });

    it('an event without a version changes nothing', async () => {
      const gateway = await aGateway({ firmwareVersion: '0.1.2' });

      await reported(gateway, [anEvent('check', Date.now() - MINUTE, { fromVersion: undefined, toVersion: undefined }), anEvent('install_succeeded', Date.now() - 2 * MINUTE, { toVersion: undefined })]);

      expect(await firmwareOf(gateway)).toBe('0.1.2');
    });

    it('only an event newer than the one that last set it changes it, whatever the order of arrival or in the batch', async () => {
      const gateway = await aGateway();
      const now = Date.now();

      // In one batch the latest ts wins, not the last position.
      await reported(gateway, [anEvent('install_succeeded', now - 5 * MINUTE, { toVersion: '0.1.60' }), anEvent('install_succeeded', now - 10 * MINUTE, { toVersion: '0.1.55' })]);
      expect(await firmwareOf(gateway)).toBe('0.1.60');

      // A late event from before that one changes nothing.
      await reported(gateway, [anEvent('rolled_back', now - 6 * MINUTE, { fromVersion: '0.1.3', toVersion: '0.1.60' })]);
      expect(await firmwareOf(gateway)).toBe('0.1.60');
      // Nor does one at the same instant.
      await reported(gateway, [anEvent('check', now - 5 * MINUTE, { fromVersion: '0.1.4', toVersion: undefined })]);
      expect(await firmwareOf(gateway)).toBe('0.1.60');

      // A newer one does.
      await reported(gateway, [anEvent('rolled_back', now - 4 * MINUTE, { fromVersion: '0.1.55', toVersion: '0.1.60' })]);
      expect(await firmwareOf(gateway)).toBe('0.1.55');
    });
  });

  // The one write to `devices` outside the devices module (SqlOtaEventStore), inside the batch's transaction.
  describe('what a batch writes to the device row', () => {
    async function lastSeenAt(gateway: Gateway): Promise<Date | null> {
      const { rows } = await t.db.query<{ last_seen_at: Date | null }>('SELECT last_seen_at FROM devices WHERE device_id = $1', [gateway.deviceId]);
      return rows[0].last_seen_at;
    }
    const setLastSeenAt = (gateway: Gateway, at: Date) => t.db.query('UPDATE devices SET last_seen_at = $2 WHERE device_id = $1', [gateway.deviceId, at]);

    it('never moves last_seen_at backwards: a batch that commits after a later sighting leaves it', async () => {
      const gateway = await aGateway();
      const later = new Date(Date.now() + HOUR);
      await setLastSeenAt(gateway, later);

      expect(await reported(gateway, [anEvent('download_started', Date.now() - MINUTE)])).toMatchObject({ accepted: 1 });

      expect(await lastSeenAt(gateway)).toEqual(later);
    });

    it('moves an earlier last_seen_at forward to when the batch arrived', async () => {
      const gateway = await aGateway();
      await setLastSeenAt(gateway, new Date(Date.now() - HOUR));
      const before = Date.now();

      await reported(gateway, [anEvent('download_started', Date.now() - MINUTE)]);

      expect((await lastSeenAt(gateway))!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    });

    it('a batch of duplicates only stores nothing and leaves last_seen_at', async () => {
      const gateway = await aGateway();
      const events = [anEvent('download_started', Date.now() - MINUTE)];
      await reported(gateway, events);
      const earlier = new Date(Date.now() - HOUR);
      await setLastSeenAt(gateway, earlier);

      expect(await reported(gateway, events)).toMatchObject({ accepted: 0, duplicates: 1 });

      expect(await lastSeenAt(gateway)).toEqual(earlier);
    });

    it('a new firmware version reaches the OTA poll, which reads the device from memory, at once', async () => {
      const gateway = await aGateway();
      const poll = async () => (await t.api.GET('/api/v1/ota/latest', { headers: bearer(gateway.accessToken) })).data!.currentVersion;
      expect(await poll()).toBe('0.1.3');

      await reported(gateway, [anEvent('install_succeeded', Date.now() - MINUTE, { toVersion: '0.1.50' })]);

      expect(await poll()).toBe('0.1.50');
    });
  });

  describe('where each gateway stands with a release (GET /api/v1/admin/firmware/:id/status)', () => {
    it('download_* → downloading, install_started → installing, install_succeeded/boot_confirmed → installed, *_failed → failed, rolled_back → rolledBack', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50' });
      const story: EventType[][] = [
        [],
        ['download_started'],
        ['download_started', 'download_progress', 'download_completed'],
        ['download_completed', 'install_started'],
        ['install_started', 'install_succeeded'],
        ['install_succeeded', 'boot_confirmed'],
        ['download_started', 'download_failed'],
        ['download_completed', 'verify_failed'],
        ['install_started', 'install_failed'],
        ['install_succeeded', 'rolled_back'],
      ];
      const gateways: Gateway[] = [];
      for (const types of story) {
        const gateway = await aGateway({ hardwareId });
        gateways.push(gateway);
        expect(await offered(gateway)).toBe('0.1.50');
        const start = Date.now() - 10 * MINUTE;
        if (types.length > 0) await reported(gateway, types.map((type, i) => anEvent(type, start + i * MINUTE, { progressPct: type === 'download_progress' ? 50 : undefined })));
      }

      const { devices, autoPaused } = await status(release.id);

      expect(devices).toEqual({ offered: 10, downloading: 2, installing: 1, installed: 2, failed: 3, rolledBack: 1, stalled: 0, heldBack: 0 });
      expect(autoPaused).toBe(false);
      const { rows } = await t.db.query<{ device_id: string; state: string }>('SELECT device_id, state FROM device_release_states WHERE release_id = $1', [release.id]);
      const stateOf = new Map(rows.map((row) => [row.device_id, row.state]));
      expect(gateways.map((gateway) => stateOf.get(gateway.deviceId))).toEqual([
        'offered',
        'downloading',
        'downloading',
        'installing',
        'installed',
        'installed',
        'failed',
        'failed',
        'failed',
        'rolled_back',
      ]);
    });

    it('events about another version, or without toVersion, leave the release alone; a gateway that reports without an offer is not counted as offered', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50' });
      await publish({ hardwareId, version: '0.1.51' });
      const forOtherHardware = await publish({ hardwareId: aHardwareId(), version: '0.1.52' });
      const gateway = await aGateway({ hardwareId });
      const now = Date.now();

      await reported(gateway, [
        anEvent('install_failed', now - 4 * MINUTE, { toVersion: '0.1.52' }),
        anEvent('install_failed', now - 3 * MINUTE, { toVersion: '0.1.51' }),
        anEvent('download_started', now - 2 * MINUTE, { toVersion: undefined }),
      ]);
      expect((await status(release.id)).devices).toEqual(NO_DEVICES);
      expect((await status(forOtherHardware.id)).devices).toEqual(NO_DEVICES);

      await reported(gateway, [anEvent('download_started', now - MINUTE, { toVersion: '0.1.50.0' })]);
      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, downloading: 1 });
    });

    it('the latest event by ts wins: a late, older event does not move a gateway back', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50' });
      const gateway = await aGateway({ hardwareId });
      const now = Date.now();

      await reported(gateway, [anEvent('install_succeeded', now - MINUTE)]);
      await reported(gateway, [anEvent('download_progress', now - 3 * MINUTE, { progressPct: 90 }), anEvent('install_failed', now - 2 * MINUTE)]);

      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, installed: 1 });
    });

    it('a gateway that installed the release and then reports running an older version counts as rolledBack', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50' });
      const gateway = await aGateway({ hardwareId });
      const now = Date.now();
      await reported(gateway, [anEvent('install_succeeded', now - 2 * MINUTE)]);
      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, installed: 1 });

      await reported(gateway, [anEvent('check', now - MINUTE, { fromVersion: '0.1.3', toVersion: undefined })]);

      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, rolledBack: 1 });
    });

    it('a gateway that installed the release and moved on to a newer one still counts as installed', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50' });
      const gateway = await aGateway({ hardwareId });
      const now = Date.now();

      await reported(gateway, [anEvent('install_succeeded', now - 2 * MINUTE), anEvent('install_succeeded', now - MINUTE, { fromVersion: '0.1.50', toVersion: '0.1.60' })]);

      expect(await firmwareOf(gateway)).toBe('0.1.60');
      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, installed: 1 });
    });

    it('a gateway that installed the release and then re-registers with an older version counts as rolledBack', async () => {
      const owner = await aCustomer(t);
      const device = await aClaimedDevice(t, owner, { firmwareVersion: '0.1.4' });
      const gateway = { deviceId: device.body.deviceId, hardwareId: device.body.hardwareId, accessToken: device.registered.accessToken };
      const release = await publish({ hardwareId: gateway.hardwareId, version: '0.1.50' });
      await reported(gateway, [anEvent('install_succeeded', Date.now() - MINUTE, { fromVersion: '0.1.4' })]);
      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, installed: 1 });
      const window = await t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', { params: { path: { deviceId: gateway.deviceId } }, headers: owner.headers });
      expect(window.response.status).toBe(200);

      const fresh = await registerDevice(t.api, { ...device.body, firmwareVersion: '0.1.4', claimCode: aClaimCode() });

      expect(await firmwareOf({ ...gateway, accessToken: fresh.accessToken })).toBe('0.1.4');
      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, rolledBack: 1 });
    });

    it('after a re-registration, a late event from before it no longer sets the firmware version', async () => {
      const owner = await aCustomer(t);
      const device = await aClaimedDevice(t, owner, { firmwareVersion: '0.1.4' });
      const gateway = { deviceId: device.body.deviceId, hardwareId: device.body.hardwareId, accessToken: device.registered.accessToken };
      await t.api.POST('/api/v1/user/devices/{deviceId}/re-registration', { params: { path: { deviceId: gateway.deviceId } }, headers: owner.headers });
      const fresh = await registerDevice(t.api, { ...device.body, firmwareVersion: '0.1.4', claimCode: aClaimCode() });
      const current = { ...gateway, accessToken: fresh.accessToken };

      // Reported before the factory reset, delivered after it.
      await reported(current, [anEvent('install_succeeded', Date.now() - 10 * MINUTE, { fromVersion: '0.1.4', toVersion: '0.1.60' })]);
      expect(await firmwareOf(current)).toBe('0.1.4');

      await reported(current, [anEvent('install_succeeded', Date.now() + 1000, { fromVersion: '0.1.4', toVersion: '0.1.60' })]);
      expect(await firmwareOf(current)).toBe('0.1.60');
    });
  });

  describe('stalled: downloading or installing and silent for OTA_STALL_TIMEOUT_SEC (default 3600)', () => {
    // Moving last_event_at back stands in for an hour of silence (a documented shortcut).
    const silentFor = (releaseId: string, gateway: Gateway, seconds: number) =>
      t.db.query(`UPDATE device_release_states SET last_event_at = now() - make_interval(secs => $3) WHERE release_id = $1 AND device_id = $2`, [
        releaseId,
        gateway.deviceId,
        seconds,
      ]);

    it('59 minutes of silence: still downloading or installing; 61 minutes: stalled; installed and failed gateways never stall', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50' });
      const [downloading, installing, installed, failed] = [await aGateway({ hardwareId }), await aGateway({ hardwareId }), await aGateway({ hardwareId }), await aGateway({ hardwareId })];
      const ts = Date.now() - 2 * HOUR;
      await reported(downloading, [anEvent('download_progress', ts, { progressPct: 10 })]);
      await reported(installing, [anEvent('install_started', ts)]);
      await reported(installed, [anEvent('install_succeeded', ts)]);
      await reported(failed, [anEvent('install_failed', ts)]);
      for (const gateway of [downloading, installing, installed, failed]) await silentFor(release.id, gateway, 59 * 60);

      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, downloading: 1, installing: 1, installed: 1, failed: 1 });

      for (const gateway of [downloading, installing, installed, failed]) await silentFor(release.id, gateway, 61 * 60);

      expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, stalled: 2, installed: 1, failed: 1 });
    });
  });

  describe('auto-pause: a release with maxFailurePercent pauses itself', () => {
    /** `count` gateways of one hardware that were offered the release. */
    async function offeredGateways(hardwareId: string, count: number): Promise<Gateway[]> {
      const gateways: Gateway[] = [];
      for (let i = 0; i < count; i++) {
        const gateway = await aGateway({ hardwareId, deviceId: aDeviceId('fleet') });
        expect(await offered(gateway)).toBe('0.1.50');
        gateways.push(gateway);
      }
      return gateways;
    }

    const finish = (gateway: Gateway, type: 'install_succeeded' | 'install_failed') => reported(gateway, [anEvent(type, Date.now() - MINUTE)]);

    async function releaseRow(id: string) {
      const { rows } = await t.db.query<{ paused: boolean; auto_paused_at: Date | null }>('SELECT paused, auto_paused_at FROM firmware_releases WHERE id = $1', [id]);
      return rows[0];
    }

    it('not with fewer than 10 finished gateways; at the 10th, when the failed share is above the percent: paused, marked, no longer offered', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50', maxFailurePercent: 20 });
      const gateways = await offeredGateways(hardwareId, 11);
      for (const gateway of gateways.slice(0, 2)) await finish(gateway, 'install_succeeded');
      for (const gateway of gateways.slice(2, 9)) await finish(gateway, 'install_failed');

      const nine = await status(release.id);
      expect(nine.devices).toEqual({ ...NO_DEVICES, offered: 11, installed: 2, failed: 7 });
      expect(nine.autoPaused).toBe(false);
      expect(nine.release.paused).toBe(false);
      expect(await offered(gateways[10])).toBe('0.1.50');

      await finish(gateways[9], 'install_failed');

      // Paused by the event batch itself, before anyone asked for the status.
      const row = await releaseRow(release.id);
      expect(row.paused).toBe(true);
      expect(row.auto_paused_at).not.toBeNull();
      const ten = await status(release.id);
      expect(ten.autoPaused).toBe(true);
      expect(ten.release).toEqual(expect.objectContaining({ paused: true, autoPaused: true }));
      expect(ten.devices).toEqual({ ...NO_DEVICES, offered: 11, installed: 2, failed: 8 });
      expect(await offered(gateways[10])).toBeNull();
      const listed = await t.api.GET('/api/v1/admin/firmware', { params: { query: { hardwareId } }, headers: admin.headers });
      expect(listed.data!.items).toEqual([expect.objectContaining({ id: release.id, paused: true, autoPaused: true })]);
    });

    it('a failed share equal to the percent does not pause; one more failure above it does', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50', maxFailurePercent: 20 });
      const gateways = await offeredGateways(hardwareId, 11);
      for (const gateway of gateways.slice(0, 8)) await finish(gateway, 'install_succeeded');
      for (const gateway of gateways.slice(8, 10)) await finish(gateway, 'install_failed');

      const atBudget = await status(release.id);
      expect(atBudget.devices).toEqual({ ...NO_DEVICES, offered: 11, installed: 8, failed: 2 });
      expect(atBudget.autoPaused).toBe(false);

      await finish(gateways[10], 'install_failed');

      expect((await status(release.id)).autoPaused).toBe(true);
    });

    it('a release without maxFailurePercent never pauses itself', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50' });
      const gateways = await offeredGateways(hardwareId, 10);
      for (const gateway of gateways) await finish(gateway, 'install_failed');

      const { devices, autoPaused, release: current } = await status(release.id);

      expect(devices.failed).toBe(10);
      expect(autoPaused).toBe(false);
      expect(current.paused).toBe(false);
    });

    it('gateways that installed and then report an older version count against the budget as rolled back', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50', maxFailurePercent: 20 });
      const gateways = await offeredGateways(hardwareId, 10);
      for (const gateway of gateways) await finish(gateway, 'install_succeeded');
      expect((await status(release.id)).autoPaused).toBe(false);

      for (const gateway of gateways.slice(0, 3)) await reported(gateway, [anEvent('check', Date.now() - 30_000, { fromVersion: '0.1.3', toVersion: undefined })]);

      const { devices, autoPaused } = await status(release.id);
      expect(devices).toEqual({ ...NO_DEVICES, offered: 10, installed: 7, rolledBack: 3 });
      expect(autoPaused).toBe(true);
    });

    it('an auto-pause holds until an administrator resumes it with PATCH paused:false; then it is offered again', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50', maxFailurePercent: 20 });
      const gateways = await offeredGateways(hardwareId, 11);
      for (const gateway of gateways.slice(0, 10)) await finish(gateway, 'install_failed');
      expect((await status(release.id)).autoPaused).toBe(true);
      // 40 more gateways install it fine: 10 of 50 failed, at the budget, no longer above it.
      for (let i = 0; i < 40; i++) await finish(await aGateway({ hardwareId }), 'install_succeeded');
      const stillPaused = await status(release.id);
      expect(stillPaused.devices).toEqual({ ...NO_DEVICES, offered: 11, installed: 40, failed: 10 });
      expect(stillPaused.autoPaused).toBe(true);
      expect(await offered(gateways[10])).toBeNull();

      const { data, response } = await t.api.PATCH('/api/v1/admin/firmware/{id}', { params: { path: { id: release.id } }, body: { paused: false }, headers: admin.headers });

      expect(response.status).toBe(200);
      expect(data).toEqual(expect.objectContaining({ paused: false, autoPaused: false }));
      expect(await releaseRow(release.id)).toEqual({ paused: false, auto_paused_at: null });
      expect(await offered(gateways[10])).toBe('0.1.50');
      const resumed = await status(release.id);
      expect({ paused: resumed.release.paused, autoPaused: resumed.autoPaused }).toEqual({ paused: false, autoPaused: false });
    });

    it('a resume by hand holds while the old failures stand; failures reported after it count again and pause it anew', async () => {
      const hardwareId = aHardwareId();
      const release = await publish({ hardwareId, version: '0.1.50', maxFailurePercent: 20 });
      const gateways = await offeredGateways(hardwareId, 10);
      for (const gateway of gateways) await finish(gateway, 'install_failed');
      expect((await status(release.id)).autoPaused).toBe(true);

      await t.api.PATCH('/api/v1/admin/firmware/{id}', { params: { path: { id: release.id } }, body: { paused: false }, headers: admin.headers });

      // The status read and the minute check both evaluate the budget: the 10 old failures no longer count.
      const afterResume = await status(release.id);
      expect({ paused: afterResume.release.paused, autoPaused: afterResume.autoPaused }).toEqual({ paused: false, autoPaused: false });
      expect(afterResume.devices.failed).toBe(10);
      expect((await releaseRow(release.id)).paused).toBe(false);

      // Ten gateways finish after the resume, three of them failing: 30 % > 20 %.
      const later = await offeredGateways(hardwareId, 10);
      for (const gateway of later.slice(0, 7)) await finish(gateway, 'install_succeeded');
      expect((await status(release.id)).autoPaused).toBe(false);
      for (const gateway of later.slice(7)) await finish(gateway, 'install_failed');

      expect((await releaseRow(release.id)).paused).toBe(true);
      expect((await status(release.id)).autoPaused).toBe(true);
    });
  });

  describe('GET /api/v1/dashboard/devices/:deviceId/ota/history', () => {
    const historyOf = (who: Headers | undefined, deviceId: string, query: HistoryQuery = {}) =>
      t.api.GET('/api/v1/dashboard/devices/{deviceId}/ota/history', { params: { path: { deviceId }, query }, headers: who });

    /** Every page from newest to oldest; `between` runs after each page (to write while paging). */
    async function allPages(who: Headers, deviceId: string, query: HistoryQuery, between: (page: number) => Promise<void> = async () => undefined) {
      const pages: HistoryItem[][] = [];
      let cursor: string | undefined;
      do {
        const { data, response } = await historyOf(who, deviceId, cursor === undefined ? query : { ...query, cursor });
        expect(response.status).toBe(200);
        pages.push(data!.items);
        cursor = data!.nextCursor ?? undefined;
        await between(pages.length);
        expect(pages.length).toBeLessThan(200);
      } while (cursor !== undefined);
      return pages;
    }

    /** (ts, id) strictly descending. */
    function expectNewestFirst(items: HistoryItem[]) {
      for (let i = 1; i < items.length; i++) {
        const [a, b] = [items[i - 1], items[i]];
        expect(a.ts > b.ts || (a.ts === b.ts && BigInt(a.id) > BigInt(b.id))).toBe(true);
      }
    }

    describe('content and query', () => {
      let owner: SignedIn;
      let gateway: Gateway;
      let events: EventBody[];
      const base = Date.now() - 2 * HOUR;

      beforeAll(async () => {
        owner = await aCustomer(t);
        const device = await aClaimedDevice(t, owner);
        gateway = { deviceId: device.body.deviceId, hardwareId: device.body.hardwareId, accessToken: device.registered.accessToken };
        events = [
          anEvent('check', base, { fromVersion: '0.1.4', toVersion: undefined }),
          anEvent('download_started', base + MINUTE, { fromVersion: '0.1.4' }),
          anEvent('download_progress', base + 2 * MINUTE, { fromVersion: '0.1.4', progressPct: 50 }),
          anEvent('download_completed', base + 3 * MINUTE, { fromVersion: '0.1.4' }),
          anEvent('install_failed', base + 4 * MINUTE, { fromVersion: '0.1.4', errorCode: 'E_FLASH', message: 'write failed at 0x1000' }),
          anEvent('rolled_back', base + 5 * MINUTE, { fromVersion: '0.1.4' }),
        ];
        await reported(gateway, events);
      });

      it('the owner: every event newest first with every field, receivedAt when it arrived, nextCursor null', async () => {
        const { data, response } = await historyOf(owner.headers, gateway.deviceId);

        expect(response.status).toBe(200);
        expect(data!.nextCursor).toBeNull();
        const rows = await eventRows(gateway.deviceId);
        expect(data!.items).toEqual(
          [...rows].reverse().map((row) => ({
            id: row.id,
            ts: row.ts.toISOString(),
            receivedAt: row.received_at.toISOString(),
            type: row.type,
            fromVersion: row.from_version,
            toVersion: row.to_version,
            progressPct: row.progress_pct,
            errorCode: row.error_code,
            message: row.message,
          })),
        );
        expect(data!.items.map((item) => item.ts)).toEqual([...events].reverse().map((event) => event.ts));
        expect(data!.items[1]).toEqual(expect.objectContaining({ type: 'install_failed', errorCode: 'E_FLASH', message: 'write failed at 0x1000', progressPct: null }));
        expect(data!.items[5]).toEqual(expect.objectContaining({ type: 'check', toVersion: null, fromVersion: '0.1.4' }));
      });

      it('type: one type, or a comma-separated list', async () => {
        const one = await historyOf(owner.headers, gateway.deviceId, { type: 'install_failed' });
        const two = await historyOf(owner.headers, gateway.deviceId, { type: 'install_failed,rolled_back,boot_confirmed' });

        expect(one.data!.items.map((item) => item.type)).toEqual(['install_failed']);
        expect(two.data!.items.map((item) => item.type)).toEqual(['rolled_back', 'install_failed']);
      });

      it('from is inclusive, to exclusive', async () => {
        const { data } = await historyOf(owner.headers, gateway.deviceId, { from: events[1].ts, to: events[4].ts });

        expect(data!.items.map((item) => item.ts)).toEqual([events[3].ts, events[2].ts, events[1].ts]);
      });

      it('without limit: pages of 50', async () => {
        const busy = await aGateway();
        await reported(busy, Array.from({ length: 60 }, (_, i) => anEvent('check', base + i * 1000)));

        const pages = await allPages(admin.headers, busy.deviceId, {});

        expect(pages.map((page) => page.length)).toEqual([50, 10]);
      });

      it('limit 200 is allowed; pages of 4 then 2', async () => {
        expect((await historyOf(owner.headers, gateway.deviceId, { limit: 200 })).response.status).toBe(200);

        const pages = await allPages(owner.headers, gateway.deviceId, { limit: 4 });

        expect(pages.map((page) => page.length)).toEqual([4, 2]);
        expectNewestFirst(pages.flat());
      });

      it.each([
        ['limit 201', { limit: 201 }, 'limit'],
        ['limit 0', { limit: 0 }, 'limit'],
        ['an unknown type', { type: 'install_failed,exploded' }, 'type'],
        ['an empty type', { type: '' }, 'type'],
        ['a garbage cursor', { cursor: 'not a cursor!' }, 'cursor'],
        ['a cursor with a key that is not an event id', { cursor: Buffer.from(`${new Date().toISOString()}|abc`, 'utf8').toString('base64url') }, 'cursor'],
        // These reached PostgreSQL (500) or were read leniently (200).
        ['a cursor with an event id beyond bigint', { cursor: Buffer.from(`${new Date().toISOString()}|9223372036854775808`, 'utf8').toString('base64url') }, 'cursor'],
        ['a cursor with a year PostgreSQL cannot store', { cursor: Buffer.from('-271821-04-20T00:00:00.000Z|42', 'utf8').toString('base64url') }, 'cursor'],
        ['a cursor with an instant read leniently ("1")', { cursor: Buffer.from('1|42', 'utf8').toString('base64url') }, 'cursor'],
        ['a cursor with 30 February', { cursor: Buffer.from('2026-02-30T00:00:00.000Z|42', 'utf8').toString('base64url') }, 'cursor'],
        ['from not a date', { from: 'yesterday' }, 'from'],
        ['from after to', { from: iso(Date.now()), to: iso(Date.now() - HOUR) }, 'from'],
      ] as Array<[string, HistoryQuery, string]>)('%s: 400 naming the field', async (_name, query, field) => {
        expect(fieldsOf(expectProblem(await historyOf(owner.headers, gateway.deviceId, query), 400, 'VALIDATION_FAILED'))).toContain(field);
      });

      it('an administrator sees it; another customer gets 404 like for a device that does not exist; anonymous and a device token: 401', async () => {
        const other = await aCustomer(t);

        expect((await historyOf(admin.headers, gateway.deviceId)).data!.items).toHaveLength(events.length);
        const hidden = expectProblem(await historyOf(other.headers, gateway.deviceId), 404, 'NOT_FOUND');
        const unknown = expectProblem(await historyOf(other.headers, aDeviceId()), 404, 'NOT_FOUND');
        expect(comparable(hidden)).toEqual(comparable(unknown));
        expectProblem(await historyOf(undefined, gateway.deviceId), 401, 'UNAUTHORIZED');
        expectProblem(await historyOf(bearer(gateway.accessToken), gateway.deviceId), 401, 'UNAUTHORIZED');
      });
    });

    it('stable pagination: events written while paging (newer and older) never make an item of the original set repeat or go missing', async () => {
      const gateway = await aGateway();
      const base = Date.now() - 3 * HOUR;
      // Pairs at the same ts so that pages also split on the id tie-breaker.
      const original = Array.from({ length: 13 }, (_, i) => [anEvent('check', base + i * MINUTE), anEvent('download_started', base + i * MINUTE)]).flat();
      await reported(gateway, original);
      const originalIds = new Set((await eventRows(gateway.deviceId)).map((row) => row.id));
      let written = 0;

      const pages = await allPages(admin.headers, gateway.deviceId, { limit: 3 }, async (page) => {
        // One newer and one older than everything so far, after every page.
        written += 2;
        await reported(gateway, [anEvent('check', base + HOUR + page * 1000), anEvent('check', base - HOUR - page * 1000)]);
      });

      const seen = pages.flat();
      expect(new Set(seen.map((item) => item.id)).size).toBe(seen.length);
      expect(seen.filter((item) => originalIds.has(item.id))).toHaveLength(originalIds.size);
      expectNewestFirst(seen);
      expect(await eventRows(gateway.deviceId)).toHaveLength(original.length + written);
    });

    it('after a release and a claim by someone else: the new owner sees events from the release on, the former owner nothing, an admin everything', async () => {
      const [a, b] = [await aCustomer(t), await aCustomer(t)];
      const device = await aClaimedDevice(t, a);
      const gateway = { deviceId: device.body.deviceId, hardwareId: device.body.hardwareId, accessToken: device.registered.accessToken };
      const aEvents = [anEvent('download_started', Date.now() - 10 * MINUTE), anEvent('install_failed', Date.now() - 9 * MINUTE)];
      await reported(gateway, aEvents);

      const released = await t.api.DELETE('/api/v1/user/devices/{deviceId}', { params: { path: { deviceId: gateway.deviceId } }, headers: a.headers });
      expect(released.response.status).toBe(204);
      const releasedAt = (await ownedDeviceRow(t.db, gateway.deviceId))!.last_released_at!.getTime();
      expect((await claim(t, b, { deviceId: gateway.deviceId, claimCode: device.body.claimCode })).response.status).toBe(200);
      const lateFromBefore = anEvent('check', releasedAt - 1, { toVersion: undefined });
      const bEvents = [anEvent('download_started', releasedAt), anEvent('download_completed', releasedAt + 1)];
      await reported(gateway, [lateFromBefore, ...bEvents]);

      const seenByB = await historyOf(b.headers, gateway.deviceId);
      const seenByBFrom = await historyOf(b.headers, gateway.deviceId, { from: iso(releasedAt - HOUR) });
      const seenByAdmin = await historyOf(admin.headers, gateway.deviceId);

      expect(seenByB.data!.items.map((item) => item.ts)).toEqual([bEvents[1].ts, bEvents[0].ts]);
      expect(seenByBFrom.data!.items.map((item) => item.ts)).toEqual([bEvents[1].ts, bEvents[0].ts]);
      expectProblem(await historyOf(a.headers, gateway.deviceId), 404, 'NOT_FOUND');
      expect(seenByAdmin.data!.items.map((item) => item.ts)).toEqual([...aEvents, lateFromBefore, ...bEvents].map((event) => event.ts).reverse());
    });
  });
});

describe('OTA events with OTA_STALL_TIMEOUT_SEC=120', () => {
  let t: TestApp;
  let admin: SignedIn;
  const { reported, aGateway, publish, status } = otaHelpers(
    () => t,
    () => admin,
  );

  beforeAll(async () => {
    t = await createTestApp({ ...ADMIN_SETTINGS, OTA_STALL_TIMEOUT_SEC: '120' });
    admin = await anAdmin(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('the timeout is read at boot: 3600 by default, 60 at least', () => {
    expect(loadEnv({ NODE_ENV: 'test' }).OTA_STALL_TIMEOUT_SEC).toBe(3600);
    expect(loadEnv({ NODE_ENV: 'test', OTA_STALL_TIMEOUT_SEC: '60' }).OTA_STALL_TIMEOUT_SEC).toBe(60);
    expect(() => loadEnv({ NODE_ENV: 'test', OTA_STALL_TIMEOUT_SEC: '59' })).toThrow(expect.objectContaining({ problems: [expect.stringMatching(/^OTA_STALL_TIMEOUT_SEC: /)] }));
  });

  it('stalled after 120 s of silence, not after 100 s; a new event makes it downloading again', async () => {
    const hardwareId = aHardwareId();
    const release = await publish({ hardwareId, version: '0.1.50' });
    const gateway = await aGateway({ hardwareId });
    await reported(gateway, [anEvent('download_started', Date.now() - 10 * MINUTE)]);
    const silentFor = (seconds: number) =>
      t.db.query('UPDATE device_release_states SET last_event_at = now() - make_interval(secs => $2) WHERE release_id = $1', [release.id, seconds]);

    await silentFor(100);
    expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, downloading: 1 });

    await silentFor(130);
    expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, stalled: 1 });

    await reported(gateway, [anEvent('download_progress', Date.now() - MINUTE, { progressPct: 30 })]);
    expect((await status(release.id)).devices).toEqual({ ...NO_DEVICES, downloading: 1 });
  });
});
