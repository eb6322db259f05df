import { RecordingAuditLog } from '../../../../test/fakes/audit/recording-audit-log.js';
import type { AuditContext } from '../../audit/index.js';

const ADMIN_BY: AuditContext = { actor: { kind: 'admin', userId: 'admin-1', apiKeyId: null }, clientAddress: '203.0.113.1' };
import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { loadEnv } from '../../../config/env.js';
import { UnauthorizedError } from '../../../shared/domain-error.js';
import type { OtaEvent, OtaEventType } from '../domain/ota-event.js';
import { FirmwareReleasesService, type PublishRelease } from './firmware-releases.service.js';
import { InMemoryBatteryReadingsQueries, InMemoryFirmwareReleaseRepository,
  InMemoryFirmwareSigningKeyStore, InMemoryOtaDevices, InMemoryOtaEventStore, InMemoryOtaTables, InMemoryReleaseOfferStore } from '../../../../test/fakes/ota/in-memory-ota.js';
import { RecordingEventLog } from '../../../../test/fakes/events/recording-event-log.js';
import { OtaService } from './ota.service.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';

const START = new Date('2026-11-21T12:00:00.000Z');
const MINUTE = 60_000;
const GATEWAY = 'gw-0001';

/** Stands for a device deleted between the service reading it and its batch taking the row lock. */
class DeletedOnceRead extends InMemoryOtaDevices {
  constructor(private readonly rows: InMemoryOtaTables) {
    super(rows);
  }

  override async target(deviceId: string) {
    const target = await super.target(deviceId);
    this.rows.devices.delete(deviceId);
    return target;
  }
}

function setUp(options: { deletedOnceRead?: boolean } = {}) {
  const tables = new InMemoryOtaTables();
  const clock = new FixedClock(START);
  const releases = new InMemoryFirmwareReleaseRepository(tables);
  const offers = new InMemoryReleaseOfferStore(tables);
  const devices = options.deletedOnceRead ? new DeletedOnceRead(tables) : new InMemoryOtaDevices(tables);
  const eventLog = new RecordingEventLog();
  const releasesService = new FirmwareReleasesService(releases, eventLog, clock, loadEnv({}), new RecordingAuditLog(), new InMemoryFirmwareSigningKeyStore(tables));
  const service = new OtaService(devices, offers, releases, releasesService, new InMemoryOtaEventStore(tables), eventLog, new InMemoryBatteryReadingsQueries(tables), clock, new MemoryCaches(loadEnv({})));
  tables.addDevice({ deviceId: GATEWAY, hardwareId: 'hw-a', firmwareVersion: '0.1.3', channel: 'stable' });
  const publish = (overrides: Partial<PublishRelease> = {}) => {
    const version = overrides.version ?? '0.1.50';
    return releasesService.publish(ADMIN_BY, { version, url: `https://fw.example.com/${version}.bin`, sha256: 'a'.repeat(64), size: 4096, ...overrides });
  };
  return { tables, clock, offers, devices, releases, service, publish, eventLog };
}

/** An event of an update from 0.1.3 to 0.1.50, `agoMs` before START. */
function anEvent(type: OtaEventType, agoMs: number, overrides: Partial<OtaEvent> = {}): OtaEvent {
  return { ts: new Date(START.getTime() - agoMs), type, fromVersion: '0.1.3', toVersion: '0.1.50', progressPct: null, errorCode: null, message: null, ...overrides };
}

describe('OtaService', () => {
  describe('latest (what the gateway should install next)', () => {
    it('offers the highest live release for its hardware and channel, newer than what it runs', async () => {
      const { service, publish } = setUp();
      await publish({ version: '0.1.40' });
      const best = await publish({ version: '0.1.50', hardwareId: 'hw-a' });
      await publish({ version: '0.1.60', hardwareId: 'hw-b' });
      await publish({ version: '0.1.70', channel: 'beta' });
      await publish({ version: '0.1.2' });

      const latest = await service.latest(GATEWAY);

      expect(latest).toMatchObject({ currentVersion: '0.1.3', release: { id: best.id, version: '0.1.50' } });
    });

    it('a beta gateway also takes the beta release', async () => {
      const { service, publish, tables } = setUp();
      tables.addDevice({ deviceId: 'gw-beta', channel: 'beta' });
      await publish({ version: '0.1.50' });
      const beta = await publish({ version: '0.1.70', channel: 'beta' });

      expect((await service.latest('gw-beta')).release?.id).toBe(beta.id);
    });

    it('offers nothing paused, revoked, outside the staged rollout or above minFromVersion', async () => {
      const { service, publish, releases } = setUp();
      const paused = await publish({ version: '0.1.50' });
      const revoked = await publish({ version: '0.1.51' });
      await releases.update(paused.id, (release) => ({ ...release, paused: true }));
      await releases.update(revoked.id, (release) => ({ ...release, revoked: true }));
      await publish({ version: '0.1.52', rolloutPercent: 0 });
      await publish({ version: '0.1.53', minFromVersion: '0.1.4' });

      expect((await service.latest(GATEWAY)).release).toBeNull();
    });

    it('the ETag changes with the release offered and with the version the gateway runs, not otherwise', async () => {
      const { service, publish, tables } = setUp();
      const none = await service.latest(GATEWAY);
      await publish({ version: '0.1.50' });
      const offered = await service.latest(GATEWAY);
      await publish({ version: '0.1.40' });
      const unchanged = await service.latest(GATEWAY);
      tables.devices.set(GATEWAY, { ...tables.device(GATEWAY), firmwareVersion: '0.1.4' });
      const newerFirmware = await service.latest(GATEWAY);

      expect(new Set([none.etag, offered.etag, newerFirmware.etag]).size).toBe(3);
      expect(unchanged.etag).toBe(offered.etag);
      expect(none.etag).toMatch(/^"ota-[A-Za-z0-9_-]{22}"$/);
    });

    it('a device that no longer exists is unauthorized', async () => {
      const { service } = setUp();

      await expect(service.latest('gw-gone')).rejects.toBeInstanceOf(UnauthorizedError);
    });
  });

  describe('recordOutcome', () => {
    it('records the offer once per device and release; a repeated poll within a minute costs no write', async () => {
      const { service, publish, offers, tables, clock } = setUp();
      const release = await publish();

      await service.recordOutcome(GATEWAY, await service.latest(GATEWAY));
      clock.advanceSec(30);
      await service.recordOutcome(GATEWAY, await service.latest(GATEWAY));

      expect(offers.offerWrites).toBe(1);
      expect(tables.state(release.id, GATEWAY)).toEqual({ deviceId: GATEWAY, releaseId: release.id, state: 'offered', offeredAt: START, lastEventTs: null, lastEventAt: null });
    });

    it('writes again when the outcome changes, and after a minute (another instance may have written since)', async () => {
      const { service, publish, offers, tables, clock } = setUp();
      const release = await publish();
      const key = `${release.id}:${GATEWAY}`;

      await service.recordOutcome(GATEWAY, await service.latest(GATEWAY));
      tables.devices.get(GATEWAY)!.socs = [10];
      await service.recordOutcome(GATEWAY, await service.latest(GATEWAY));
      expect(offers.heldBack.get(key)).toBe('LOW_SOC');
      tables.devices.get(GATEWAY)!.socs = [90];
      await service.recordOutcome(GATEWAY, await service.latest(GATEWAY));
      expect(offers.heldBack.has(key)).toBe(false);
      clock.advanceSec(61);
      await service.recordOutcome(GATEWAY, await service.latest(GATEWAY));

      expect(offers.offerWrites).toBe(4);
    });
  });

  describe('battery-aware offers', () => {
    it('holds the release back while any battery is below otaMinSoc or outside the temperature range, with its own ETag', async () => {
      const { service, publish, tables } = setUp();
      const release = await publish();
      const device = tables.devices.get(GATEWAY)!;
      const offered = await service.latest(GATEWAY);
      expect(offered).toMatchObject({ release: { id: release.id }, heldBack: null });

      device.socs = [80, 39.9];
      const lowSoc = await service.latest(GATEWAY);
      expect(lowSoc).toMatchObject({ release: null, heldBack: { reason: 'LOW_SOC', release: { id: release.id } } });

      device.socs = [40];
      device.temperatures = [45.5];
      const hot = await service.latest(GATEWAY);
      expect(hot).toMatchObject({ release: null, heldBack: { reason: 'TEMPERATURE' } });
      device.temperatures = [-0.1];
      expect((await service.latest(GATEWAY)).heldBack?.reason).toBe('TEMPERATURE');

      device.temperatures = [0, 45];
      const recovered = await service.latest(GATEWAY);
      expect(recovered).toMatchObject({ release: { id: release.id }, heldBack: null });
      expect(new Set([offered.etag, lowSoc.etag, hot.etag]).size).toBe(3);
      expect(recovered.etag).toBe(offered.etag);
    });

    it('never holds back a device that reports neither soc nor temperature, and follows the device’s own thresholds', async () => {
      const { service, publish, tables } = setUp();
      await publish();
      const device = tables.devices.get(GATEWAY)!;
      expect((await service.latest(GATEWAY)).heldBack).toBeNull();

      device.socs = [30];
      device.minSoc = 25;
      expect((await service.latest(GATEWAY)).heldBack).toBeNull();
      device.minSoc = 31;
      expect((await service.latest(GATEWAY)).heldBack?.reason).toBe('LOW_SOC');
    });

    it('without a release to offer, nothing is held back', async () => {
      const { service, tables } = setUp();
      tables.devices.get(GATEWAY)!.socs = [1];
      expect(await service.latest(GATEWAY)).toMatchObject({ release: null, heldBack: null });
    });
  });

  describe('ingest (a batch of OTA events)', () => {
    it('stores the batch and answers how many were new', async () => {
      const { service, tables } = setUp();

      const outcome = await service.ingest(GATEWAY, [anEvent('download_started', 3 * MINUTE), anEvent('download_completed', 2 * MINUTE), anEvent('install_started', MINUTE)]);

      expect(outcome).toEqual({ accepted: 3, duplicates: 0, coalesced: 0, rejected: [] });
      expect(tables.events.map((event) => [event.type, event.receivedAt])).toEqual([
        ['download_started', START],
        ['download_completed', START],
        ['install_started', START],
      ]);
    });

    it('is idempotent on (device, ts, type): a retried batch stores nothing twice, an overlapping one only what is new', async () => {
      const { service, tables } = setUp();
      const batch = [anEvent('download_started', 3 * MINUTE), anEvent('download_completed', 2 * MINUTE)];
      await service.ingest(GATEWAY, batch);

      const retried = await service.ingest(GATEWAY, batch);
      const overlapping = await service.ingest(GATEWAY, [...batch.map((event) => ({ ...event, message: 'again' })), anEvent('download_completed', MINUTE)]);

      expect(retried).toEqual({ accepted: 0, duplicates: 2, coalesced: 0, rejected: [] });
      expect(overlapping).toEqual({ accepted: 1, duplicates: 2, coalesced: 0, rejected: [] });
      expect(tables.events.map((event) => event.message)).toEqual([null, null, null]);
    });

    it('tells each outcome once as an event: ota.succeeded for install_succeeded, ota.failed for a failure or rollback; a retried batch tells nothing again', async () => {
      const { service, eventLog } = setUp();
      const batch = [anEvent('install_started', 4 * MINUTE), anEvent('install_failed', 3 * MINUTE, { errorCode: 'E_FLASH' }), anEvent('install_succeeded', MINUTE), anEvent('boot_confirmed', 0)];

      await service.ingest(GATEWAY, batch);
      await service.ingest(GATEWAY, batch);

      expect(eventLog.recorded).toEqual([
        { type: 'ota.failed', deviceId: GATEWAY, ownerId: null, occurredAt: START, data: { fromVersion: '0.1.3', toVersion: '0.1.50', report: 'install_failed', reportedAt: new Date(START.getTime() - 3 * MINUTE).toISOString(), errorCode: 'E_FLASH' } },
        { type: 'ota.succeeded', deviceId: GATEWAY, ownerId: null, occurredAt: START, data: { fromVersion: '0.1.3', toVersion: '0.1.50', report: 'install_succeeded', reportedAt: new Date(START.getTime() - MINUTE).toISOString(), errorCode: null } },
      ]);
    });

    it('rejects events more than 5 minutes ahead of the service clock by index and stores the rest', async () => {
      const { service, tables } = setUp();

      const outcome = await service.ingest(GATEWAY, [anEvent('check', -5 * MINUTE, { toVersion: null }), anEvent('download_started', -5 * MINUTE - 1), anEvent('download_failed', MINUTE)]);

      expect(outcome).toEqual({ accepted: 2, duplicates: 0, coalesced: 0, rejected: [{ index: 1, code: 'TS_IN_FUTURE' }] });
      expect(tables.events.map((event) => event.type)).toEqual(['download_failed', 'check']);
    });

    it('coalesces download progress closer than 30 s to a kept or stored one of the same download', async () => {
      const { service, tables } = setUp();
      await service.ingest(GATEWAY, [anEvent('download_progress', 100_000, { progressPct: 10 })]);

      const outcome = await service.ingest(GATEWAY, [
        anEvent('download_progress', 80_000, { progressPct: 20 }),
        anEvent('download_progress', 65_000, { progressPct: 30 }),
        anEvent('download_progress', 60_000, { progressPct: 40 }),
        anEvent('download_progress', 60_000, { progressPct: 40, toVersion: '0.1.60' }),
      ]);

      expect(outcome).toEqual({ accepted: 2, duplicates: 0, coalesced: 2, rejected: [] });
      expect(tables.events.map((event) => [event.progressPct, event.toVersion])).toEqual([
        [10, '0.1.50'],
        [30, '0.1.50'],
        [40, '0.1.60'],
      ]);
    });

    it('moves the device with the release of toVersion to the state after its latest event; a late, older batch does not move it back', async () => {
      const { service, publish, tables } = setUp();
      const release = await publish({ version: '0.1.50' });

      await service.ingest(GATEWAY, [anEvent('install_started', 2 * MINUTE), anEvent('download_completed', 3 * MINUTE)]);
      expect(tables.state(release.id, GATEWAY)).toMatchObject({ state: 'installing', lastEventTs: anEvent('check', 2 * MINUTE).ts, lastEventAt: START });

      await service.ingest(GATEWAY, [anEvent('download_failed', 4 * MINUTE)]);
      expect(tables.state(release.id, GATEWAY)?.state).toBe('installing');

      await service.ingest(GATEWAY, [anEvent('install_failed', MINUTE)]);
      expect(tables.state(release.id, GATEWAY)?.state).toBe('failed');
    });

    it('refers an event to the release for its hardware over a generic one, then to the one on its channel', async () => {
      const { service, publish, tables } = setUp();
      const generic = await publish({ version: '0.1.50' });
      const beta = await publish({ version: '0.1.50', hardwareId: 'hw-a', channel: 'beta' });
      const forItsHardware = await publish({ version: '0.1.50.0', hardwareId: 'hw-a' });

      await service.ingest(GATEWAY, [anEvent('download_started', MINUTE)]);

      expect(tables.state(forItsHardware.id, GATEWAY)?.state).toBe('downloading');
      expect(tables.state(generic.id, GATEWAY)).toBeUndefined();
      expect(tables.state(beta.id, GATEWAY)).toBeUndefined();
    });

    it('sets the firmware the device runs from the latest report, tells the devices module, and ignores older reports', async () => {
      const { service, tables, devices } = setUp();

      await service.ingest(GATEWAY, [anEvent('install_succeeded', 5 * MINUTE, { toVersion: '0.1.60' }), anEvent('install_succeeded', 10 * MINUTE, { toVersion: '0.1.55' })]);
      expect(tables.device(GATEWAY)).toMatchObject({ firmwareVersion: '0.1.60', firmwareReportedAt: anEvent('check', 5 * MINUTE).ts });
      expect(devices.firmwareChanges).toEqual([GATEWAY]);

      await service.ingest(GATEWAY, [anEvent('rolled_back', 6 * MINUTE, { fromVersion: '0.1.3', toVersion: '0.1.60' })]);
      expect(tables.device(GATEWAY).firmwareVersion).toBe('0.1.60');

      await service.ingest(GATEWAY, [anEvent('rolled_back', 4 * MINUTE, { fromVersion: '0.1.55', toVersion: '0.1.60' })]);
      expect(tables.device(GATEWAY).firmwareVersion).toBe('0.1.55');
      expect(devices.firmwareChanges).toEqual([GATEWAY, GATEWAY]);
    });

    it('a report of the version the device already runs stores the report but tells nobody', async () => {
      const { service, tables, devices } = setUp();

      await service.ingest(GATEWAY, [anEvent('check', MINUTE, { fromVersion: '0.1.3', toVersion: null })]);

      expect(tables.device(GATEWAY).firmwareReportedAt).toEqual(anEvent('check', MINUTE).ts);
      expect(devices.firmwareChanges).toEqual([]);
    });

    it('sees the device when something new was stored; last_seen_at never moves back', async () => {
      const { service, tables, clock } = setUp();
      const batch = [anEvent('download_started', MINUTE)];

      await service.ingest(GATEWAY, batch);
      expect(tables.device(GATEWAY).lastSeenAt).toEqual(START);

      clock.advanceSec(60);
      await service.ingest(GATEWAY, batch);
      expect(tables.device(GATEWAY).lastSeenAt).toEqual(START);

      const later = new Date(clock.now().getTime() + 60 * MINUTE);
      tables.devices.set(GATEWAY, { ...tables.device(GATEWAY), lastSeenAt: later });
      await service.ingest(GATEWAY, [anEvent('download_completed', 0)]);
      expect(tables.device(GATEWAY).lastSeenAt).toEqual(later);
    });

    it('a device that no longer exists is unauthorized', async () => {
      const { service, tables } = setUp();

      await expect(service.ingest('gw-gone', [anEvent('download_started', MINUTE)])).rejects.toBeInstanceOf(UnauthorizedError);
      expect(tables.events).toEqual([]);
    });

    it('a device deleted before its batch holds it is unauthorized, and nothing is stored', async () => {
      const { service, tables, devices } = setUp({ deletedOnceRead: true });

      await expect(service.ingest(GATEWAY, [anEvent('install_succeeded', MINUTE)])).rejects.toBeInstanceOf(UnauthorizedError);
      expect(tables.events).toEqual([]);
      expect(devices.firmwareChanges).toEqual([]);
    });

    it('pauses a release the batch pushed over its failure budget (at least 10 finished devices)', async () => {
      const { service, publish, releases, tables } = setUp();
      const release = await publish({ version: '0.1.50', maxFailurePercent: 50 });
      for (let i = 0; i < 9; i++) {
        const deviceId = `gw-failed-${i}`;
        tables.addDevice({ deviceId });
        await service.ingest(deviceId, [anEvent('install_failed', MINUTE)]);
      }
      expect(await releases.findById(release.id)).toMatchObject({ paused: false });

      await service.ingest(GATEWAY, [anEvent('download_failed', MINUTE)]);

      expect(await releases.findById(release.id)).toMatchObject({ paused: true, autoPausedAt: START });
      expect((await service.latest('gw-failed-0')).release).toBeNull();
    });
  });
});
