import { RecordingAuditLog } from '../../../../test/fakes/audit/recording-audit-log.js';
import type { AuditContext } from '../../audit/index.js';

const ADMIN_BY: AuditContext = { actor: { kind: 'admin', userId: 'admin-1', apiKeyId: null }, clientAddress: '203.0.113.1' };
import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { loadEnv } from '../../../config/env.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import type { ReleaseState } from '../domain/firmware-release.js';
import { RecordingEventLog } from '../../../../test/fakes/events/recording-event-log.js';
import { FirmwareReleaseExistsError, FirmwareReleasesService, type PublishRelease } from './firmware-releases.service.js';
import { InMemoryFirmwareReleaseRepository,
  InMemoryFirmwareSigningKeyStore, InMemoryOtaTables } from '../../../../test/fakes/ota/in-memory-ota.js';

const START = new Date('2026-11-21T12:00:00.000Z');
const STALL_TIMEOUT_SEC = 600;

function setUp() {
  const tables = new InMemoryOtaTables();
  const clock = new FixedClock(START);
  const repository = new InMemoryFirmwareReleaseRepository(tables);
  const service = new FirmwareReleasesService(repository, new RecordingEventLog(), clock, loadEnv({ OTA_STALL_TIMEOUT_SEC: String(STALL_TIMEOUT_SEC) }), new RecordingAuditLog(), new InMemoryFirmwareSigningKeyStore(tables));
  let devices = 0;
  /** `count` devices that reached `state` with the release, their last event `agoSec` before now. */
  const devicesIn = (releaseId: string, state: ReleaseState, count: number, options: { agoSec?: number; runs?: string } = {}) => {
    for (let i = 0; i < count; i++) {
      const deviceId = `gw-${String(++devices).padStart(4, '0')}`;
      tables.addDevice({ deviceId, firmwareVersion: options.runs ?? '0.2.0' });
      const lastEventAt = new Date(clock.now().getTime() - (options.agoSec ?? 0) * 1000);
      tables.setState({ deviceId, releaseId, state, offeredAt: START, lastEventTs: lastEventAt, lastEventAt });
    }
  };
  return { tables, clock, repository, service, devicesIn };
}

const aRelease = (overrides: Partial<PublishRelease> = {}): PublishRelease => ({
  version: '0.2.0',
  url: 'https://fw.example.com/0.2.0.bin',
  sha256: 'AB'.repeat(32),
  size: 4096,
  ...overrides,
});

describe('FirmwareReleasesService', () => {
  describe('publish', () => {
    it('stores a live release with the defaults: stable, every hardware, 100 %, no failure budget; the sha256 in lower case', async () => {
      const { service, repository } = setUp();

      const release = await service.publish(ADMIN_BY, aRelease());

      expect(release).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        version: '0.2.0',
        hardwareId: null,
        channel: 'stable',
        url: 'https://fw.example.com/0.2.0.bin',
        sha256: 'ab'.repeat(32),
        size: 4096,
        releaseNotes: null,
        rolloutPercent: 100,
        minFromVersion: null,
        maxFailurePercent: null,
        minCrashFreePercent: null,
        paused: false,
        autoPausedAt: null,
        revoked: false,
        awaitingImage: false,
        publishedAt: START,
        updatedAt: START,
        signed: null,
        targetTags: null,
        targetDeviceIds: null,
        startsAt: null,
        rollbackTo: null,
      });
      expect(await repository.findById(release.id)).toEqual(release);
    });

    it('the same version (numerically), hardware and channel again is FIRMWARE_RELEASE_EXISTS; another channel or hardware is a new release', async () => {
      const { service, repository } = setUp();
      await service.publish(ADMIN_BY, aRelease({ version: '0.2.0', hardwareId: 'hw-a' }));

      await expect(service.publish(ADMIN_BY, aRelease({ version: '0.2.0.0', hardwareId: 'hw-a' }))).rejects.toMatchObject({ code: 'FIRMWARE_RELEASE_EXISTS', kind: 'conflict' });
      await expect(service.publish(ADMIN_BY, aRelease({ version: '0.02.0', hardwareId: 'hw-a' }))).rejects.toBeInstanceOf(FirmwareReleaseExistsError);
      await service.publish(ADMIN_BY, aRelease({ version: '0.2.0', hardwareId: 'hw-a', channel: 'beta' }));
      await service.publish(ADMIN_BY, aRelease({ version: '0.2.0', hardwareId: 'hw-b' }));
      await service.publish(ADMIN_BY, aRelease({ version: '0.2.0' }));

      expect(await repository.list({ includeRevoked: true, limit: 10 })).toHaveLength(4);
    });

    it('refuses a version or minFromVersion that is not dotted numeric', async () => {
      const { service } = setUp();

      await expect(service.publish(ADMIN_BY, aRelease({ version: '1.x' }))).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
      await expect(service.publish(ADMIN_BY, aRelease({ minFromVersion: 'v0.1' }))).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    });
  });

  describe('change', () => {
    it('changes the rollout percent, pauses, revokes; updatedAt moves, the rest stays', async () => {
      const { service, clock } = setUp();
      const release = await service.publish(ADMIN_BY, aRelease({ rolloutPercent: 10 }));
      clock.advanceSec(60);

      const changed = await service.change(ADMIN_BY, release.id, { rolloutPercent: 50, paused: true });
      const revoked = await service.change(ADMIN_BY, release.id, { revoked: true });

      expect(changed).toEqual({ ...release, rolloutPercent: 50, paused: true, updatedAt: clock.now() });
      expect(revoked).toEqual({ ...changed, revoked: true });
    });

    it('an unknown id is not found', async () => {
      const { service } = setUp();

      await expect(service.change(ADMIN_BY, '00000000-0000-4000-8000-000000000000', { paused: true })).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe('status', () => {
    it('counts devices per state; silent downloads and installs past OTA_STALL_TIMEOUT_SEC are stalled', async () => {
      const { service, devicesIn } = setUp();
      const release = await service.publish(ADMIN_BY, aRelease());
      devicesIn(release.id, 'offered', 2);
      devicesIn(release.id, 'downloading', 1, { agoSec: STALL_TIMEOUT_SEC - 1 });
      devicesIn(release.id, 'downloading', 2, { agoSec: STALL_TIMEOUT_SEC + 1 });
      devicesIn(release.id, 'installing', 1, { agoSec: 10 });
      devicesIn(release.id, 'installing', 1, { agoSec: STALL_TIMEOUT_SEC * 2 });
      devicesIn(release.id, 'installed', 3);
      devicesIn(release.id, 'failed', 1);
      devicesIn(release.id, 'rolled_back', 1);

      const { counts, autoPaused } = await service.status(release.id);

      expect(counts).toEqual({ offered: 12, downloading: 1, installing: 1, stalled: 3, installed: 3, failed: 1, rolledBack: 1, heldBack: 0 });
      expect(autoPaused).toBe(false);
    });

    it('a device that installed the release but now runs an older version counts as rolled back', async () => {
      const { service, devicesIn } = setUp();
      const release = await service.publish(ADMIN_BY, aRelease({ version: '0.2.0' }));
      devicesIn(release.id, 'installed', 1, { runs: '0.1.9' });
      devicesIn(release.id, 'installed', 1, { runs: '0.2.1' });

      expect((await service.status(release.id)).counts).toMatchObject({ installed: 1, rolledBack: 1 });
    });

    it('pauses a release whose failed and rolled-back share among at least 10 finished devices exceeds maxFailurePercent', async () => {
      const { service, devicesIn, clock } = setUp();
      const release = await service.publish(ADMIN_BY, aRelease({ maxFailurePercent: 20 }));
      devicesIn(release.id, 'installed', 7);
      devicesIn(release.id, 'failed', 2);
      devicesIn(release.id, 'rolled_back', 1);
      clock.advanceSec(30);

      const status = await service.status(release.id);

      expect(status.autoPaused).toBe(true);
      expect(status.release).toMatchObject({ paused: true, autoPausedAt: clock.now(), updatedAt: clock.now() });
    });

    it('pauses a release whose crash-free share among at least 10 confirmed devices falls below minCrashFreePercent, and the minute check finds it', async () => {
      const { service, repository } = setUp();
      const release = await service.publish(ADMIN_BY, aRelease({ minCrashFreePercent: 95 }));
      repository.crashFreeOf.set(release.id, { bootConfirmed: 20, crashed: 1 });
      await service.pauseFailingReleases();
      expect((await service.status(release.id)).autoPaused).toBe(false);

      repository.crashFreeOf.set(release.id, { bootConfirmed: 20, crashed: 2 });
      await service.pauseFailingReleases();
      const status = await service.status(release.id);
      expect(status.autoPaused).toBe(true);
      expect(status.crashFree).toEqual({ bootConfirmed: 20, crashed: 2 });
    });

    it.each([
      ['9 finished devices, even all failed', { installed: 0, failed: 9 }],
      ['a share equal to the budget', { installed: 8, failed: 2 }],
      ['downloading and stalled devices, which have not finished', { installed: 8, failed: 1, downloading: 20 }],
    ])('does not pause for %s', async (_label, spread) => {
      const { service, devicesIn } = setUp();
      const release = await service.publish(ADMIN_BY, aRelease({ maxFailurePercent: 20 }));
      devicesIn(release.id, 'installed', spread.installed);
      devicesIn(release.id, 'failed', spread.failed);
      devicesIn(release.id, 'downloading', 'downloading' in spread ? spread.downloading : 0, { agoSec: STALL_TIMEOUT_SEC * 2 });

      const status = await service.status(release.id);

      expect(status.autoPaused).toBe(false);
      expect(status.release.paused).toBe(false);
    });

    it('never pauses a release without a failure budget, or one paused by hand', async () => {
      const { service, devicesIn } = setUp();
      const unbudgeted = await service.publish(ADMIN_BY, aRelease({ version: '0.2.0' }));
      const pausedByHand = await service.publish(ADMIN_BY, aRelease({ version: '0.2.1', maxFailurePercent: 5 }));
      await service.change(ADMIN_BY, pausedByHand.id, { paused: true });
      devicesIn(unbudgeted.id, 'failed', 10);
      devicesIn(pausedByHand.id, 'failed', 10);

      expect(await service.status(unbudgeted.id)).toMatchObject({ autoPaused: false, release: { paused: false } });
      expect(await service.status(pausedByHand.id)).toMatchObject({ autoPaused: false, release: { paused: true, autoPausedAt: null } });
    });

    it('after a resume by hand, the budget counts only devices that report after it', async () => {
      const { service, devicesIn, clock } = setUp();
      const release = await service.publish(ADMIN_BY, aRelease({ maxFailurePercent: 20 }));
      devicesIn(release.id, 'failed', 10);
      expect((await service.status(release.id)).autoPaused).toBe(true);
      clock.advanceSec(60);

      const resumed = await service.change(ADMIN_BY, release.id, { paused: false });

      expect(resumed).toMatchObject({ paused: false, autoPausedAt: null });
      expect(await service.status(release.id)).toMatchObject({ autoPaused: false, counts: { failed: 10 } });
      clock.advanceSec(60);
      devicesIn(release.id, 'failed', 9);
      expect((await service.status(release.id)).autoPaused).toBe(false);
      devicesIn(release.id, 'failed', 1);
      expect((await service.status(release.id)).autoPaused).toBe(true);
    });

    it('an unknown id is not found', async () => {
      const { service } = setUp();

      await expect(service.status('00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe('pauseFailingReleases (the scheduled check)', () => {
    it('pauses every live release over its budget and leaves the others', async () => {
      const { service, repository, devicesIn } = setUp();
      const failing = await service.publish(ADMIN_BY, aRelease({ version: '0.2.0', maxFailurePercent: 10 }));
      const healthy = await service.publish(ADMIN_BY, aRelease({ version: '0.2.1', maxFailurePercent: 10 }));
      const revoked = await service.publish(ADMIN_BY, aRelease({ version: '0.2.2', maxFailurePercent: 10 }));
      await service.change(ADMIN_BY, revoked.id, { revoked: true });
      devicesIn(failing.id, 'failed', 10);
      devicesIn(healthy.id, 'installed', 10, { runs: '0.2.1' });
      devicesIn(revoked.id, 'failed', 10);

      await service.pauseFailingReleases();

      expect(await repository.findById(failing.id)).toMatchObject({ paused: true, autoPausedAt: expect.any(Date) });
      expect(await repository.findById(healthy.id)).toMatchObject({ paused: false, autoPausedAt: null });
      expect(await repository.findById(revoked.id)).toMatchObject({ paused: false, autoPausedAt: null });
    });
  });
});
