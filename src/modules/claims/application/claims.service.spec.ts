import { RecordingAuditLog } from '../../../../test/fakes/audit/recording-audit-log.js';
import { ChangeFeed } from '../../../shared/database/change-feed.js';
import { DeviceSnapshots } from '../../devices/application/device-snapshots.js';
import { InMemoryFleetDefaultsStore } from '../../../../test/fakes/devices/in-memory-fleet-defaults-store.js';
import { FixedClock } from '../../../../test/fakes/config/fixed-clock.js';
import { JwtService } from '@nestjs/jwt';
import { loadEnv } from '../../../config/env.js';
import { InMemoryRefreshTokenStore } from '../../../../test/fakes/shared/in-memory-refresh-token-store.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { TEST_HASH_COST } from '../../../../test/support/hash-cost.js';
import { NotFoundError, RateLimitedError } from '../../../shared/domain-error.js';
import { InMemoryFailureLimiter } from '../../../shared/rate-limit/failure-limiter.js';
import { CustomerPrincipal } from '../../../auth/principals.js';
import { DeviceTokens } from '../../devices/application/device-tokens.js';
import { DeviceOwnershipService } from '../../devices/application/device-ownership.service.js';
import { DeviceRegistrationService, type RegisterDeviceCommand } from '../../devices/application/device-registration.service.js';
import { InMemoryDeviceRepository, InMemoryDeviceSnapshotSource } from '../../../../test/fakes/devices/in-memory-device-repository.js';
import { RegistrationAllowlistStore } from '../../devices/domain/registration-allowlist.store.js';
import { ClaimAuditStore, type ClaimAuditEntry } from '../domain/claim-audit.store.js';
import { ClaimCodeMissingError, DeviceAlreadyClaimedError, DeviceSecretRequiredError, EmailNotVerifiedError, InvalidClaimError } from '../domain/claim.errors.js';
import { RecordingEventLog } from '../../../../test/fakes/events/recording-event-log.js';
import { SharingService } from '../../sharing/index.js';
import { OrganizationsService } from '../../organizations/index.js';
import { NoOrganizations } from '../../../../test/fakes/organizations/no-organizations.js';
import { InMemoryShareStore } from '../../../../test/fakes/sharing/in-memory-share-store.js';
import { ClaimsService, type ClaimCommand } from './claims.service.js';
import { MemoryCaches } from '../../../shared/memory/memory-caches.js';

/** Open registration: the allowlist is never consulted. */
class NoAllowlist extends RegistrationAllowlistStore {
  async allows(): Promise<boolean> {
    return true;
  }
  async importEntries(): Promise<number> {
    return 0;
  }
}

class RecordingClaimAudit extends ClaimAuditStore {
  readonly entries: ClaimAuditEntry[] = [];

  async record(entry: ClaimAuditEntry): Promise<void> {
    this.entries.push({ ...entry });
  }

  last(): ClaimAuditEntry | undefined {
    return this.entries.at(-1);
  }
}

const START = new Date('2026-11-21T12:00:00.000Z');
const ADDRESS = '203.0.113.7';
const CLAIM_CODE = 'QUICK-AMBER-FALCON';
const ALICE = new CustomerPrincipal('user-alice', 'customer', true);
const BOB = new CustomerPrincipal('user-bob', 'customer', true);
const ADMIN = new CustomerPrincipal('user-admin', 'admin', true);
const UNVERIFIED = new CustomerPrincipal('user-carol', 'customer', false);

function setUp(envSource: Record<string, string> = {}) {
  const env = loadEnv(envSource);
  const clock = new FixedClock(START);
  const repository = new InMemoryDeviceRepository();
  const hasher = new SecretHasher('x'.repeat(32), TEST_HASH_COST);
  const limiter = new InMemoryFailureLimiter(() => clock.now().getTime());
  const tokens = new DeviceTokens(new JwtService({ secret: 'y'.repeat(32) }), new InMemoryRefreshTokenStore(), hasher, env);
  const registration = new DeviceRegistrationService(repository, new NoAllowlist(), tokens, hasher, limiter, clock, env, new DeviceSnapshots(new InMemoryDeviceSnapshotSource(repository), new ChangeFeed('postgres://unused'), new MemoryCaches(env)), new InMemoryFleetDefaultsStore());
  const devices = new DeviceOwnershipService(repository, tokens, hasher, env);
  const audit = new RecordingClaimAudit();
  const events = new RecordingEventLog();
  const service = new ClaimsService(devices, audit, events, hasher, limiter, clock, env, new RecordingAuditLog(), new SharingService(new InMemoryShareStore(), clock, new RecordingAuditLog(), new OrganizationsService(new NoOrganizations(), clock, new RecordingAuditLog())), new OrganizationsService(new NoOrganizations(), clock, new RecordingAuditLog()));
  const register = async (overrides: Partial<RegisterDeviceCommand> = {}) =>
    registration.register({ deviceId: 'gw-0001', hardwareId: 'esp32s3-7c:df:a1:0b:22:c4', firmwareVersion: '0.1.4', claimCode: CLAIM_CODE, ...overrides }, ADDRESS);
  /** A gateway from before claim codes: claimed with its device secret. */
  const registerLegacy = async (deviceId = 'gw-0001') => (await register({ deviceId, firmwareVersion: '0.1.3', claimCode: undefined })).deviceSecret;
  const stored = async (deviceId: string) => {
    const device = await repository.findById(deviceId);
    if (!device) throw new Error(`${deviceId} is not stored`);
    return device;
  };
  return { env, clock, audit, events, devices, service, register, registerLegacy, stored };
}

const withCode = (deviceId = 'gw-0001', claimCode = CLAIM_CODE): ClaimCommand => ({ deviceId, claimCode });

describe('ClaimsService', () => {
  describe('claim', () => {
    it('gives an unclaimed device to the customer with the right claim code, as of now', async () => {
      const { service, register, clock, stored } = setUp();
      await register();
      clock.advanceSec(60);

      const ownership = await service.claim(ALICE, withCode(), ADDRESS);

      expect(ownership).toEqual({ deviceId: 'gw-0001', ownerId: ALICE.userId, claimedAt: clock.now() });
      expect((await stored('gw-0001')).toState()).toMatchObject({ ownerId: ALICE.userId, claimedAt: clock.now(), visibleSince: null });
      expect((await service.listDevices(ALICE, 50)).items.map((device) => device.deviceId)).toEqual(['gw-0001']);
      expect(await service.listDevices(BOB, 50)).toEqual({ items: [], nextCursor: null });
    });

    it('records device.claimed once: a repeated claim by the owner records nothing more', async () => {
      const { service, register, events, clock } = setUp();
      await register();

      await service.claim(ALICE, withCode(), ADDRESS);
      clock.advanceSec(5);
      await service.claim(ALICE, withCode(), ADDRESS);

      expect(events.recorded).toEqual([{ type: 'device.claimed', deviceId: 'gw-0001', ownerId: ALICE.userId, occurredAt: START, data: { ownerId: ALICE.userId } }]);
    });

    it('accepts the claim code in lower case', async () => {
      const { service, register } = setUp();
      await register();

      await expect(service.claim(ALICE, withCode('gw-0001', 'quick-amber-falcon'), ADDRESS)).resolves.toMatchObject({ ownerId: ALICE.userId });
    });

    it('gives a legacy device to the customer with its device secret', async () => {
      const { service, registerLegacy, stored } = setUp();
      const deviceSecret = await registerLegacy();

      await expect(service.claim(ALICE, { deviceId: 'gw-0001', deviceSecret }, ADDRESS)).resolves.toMatchObject({ ownerId: ALICE.userId });
      expect((await stored('gw-0001')).ownerId).toBe(ALICE.userId);
    });

    it('answers a repeated claim by the owner with the original ownership', async () => {
      const { service, register, clock, stored } = setUp();
      await register();
      const first = await service.claim(ALICE, withCode(), ADDRESS);
      clock.advanceSec(3600);

      const again = await service.claim(ALICE, withCode(), ADDRESS);

      expect(again).toEqual(first);
      expect(again.claimedAt).toEqual(START);
      expect((await stored('gw-0001')).claimedAt).toEqual(START);
    });

    it('still asks the owner for the proof on a repeated claim', async () => {
      const { service, register } = setUp();
      await register();
      await service.claim(ALICE, withCode(), ADDRESS);

      await expect(service.claim(ALICE, withCode('gw-0001', 'SLOW-GREEN-HERON'), ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
      await expect(service.claim(ALICE, { deviceId: 'gw-0001' }, ADDRESS)).rejects.toBeInstanceOf(ClaimCodeMissingError);
    });

    it('lets only one of two customers racing with the right code win; the other gets 409', async () => {
      const { service, register, stored } = setUp();
      await register();

      const results = await Promise.allSettled([service.claim(ALICE, withCode(), ADDRESS), service.claim(BOB, withCode(), ADDRESS)]);

      const winners = results.filter((result) => result.status === 'fulfilled');
      const losers = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
      expect(winners).toHaveLength(1);
      expect(losers.map((result) => result.reason)).toEqual([expect.any(DeviceAlreadyClaimedError)]);
      expect([ALICE.userId, BOB.userId]).toContain((await stored('gw-0001')).ownerId);
    });

    describe('evaluation order', () => {
      it('refuses an unverified customer with 403 before looking at the device', async () => {
        const { service, register } = setUp();
        await register();

        await expect(service.claim(UNVERIFIED, withCode('gw-9999'), ADDRESS)).rejects.toBeInstanceOf(EmailNotVerifiedError);
        await expect(service.claim(UNVERIFIED, withCode(), ADDRESS)).rejects.toMatchObject({ code: 'EMAIL_NOT_VERIFIED', kind: 'forbidden' });
      });

      it('refuses an unverified customer with 403 even while the customer is rate limited', async () => {
        const { service, env } = setUp();
        for (let i = 0; i < env.CLAIM_MAX_FAILURES_PER_CUSTOMER; i++) {
          await expect(service.claim(ALICE, withCode(`gw-guess-${i}`), ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
        }
        const unverifiedAlice = new CustomerPrincipal(ALICE.userId, 'customer', false);

        await expect(service.claim(unverifiedAlice, withCode('gw-guess-x'), ADDRESS)).rejects.toBeInstanceOf(EmailNotVerifiedError);
        await expect(service.claim(ALICE, withCode('gw-guess-x'), ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
      });

      it('lets an unverified customer claim when EMAIL_VERIFICATION_REQUIRED is false', async () => {
        const { service, register } = setUp({ EMAIL_VERIFICATION_REQUIRED: 'false' });
        await register();

        await expect(service.claim(UNVERIFIED, withCode(), ADDRESS)).resolves.toMatchObject({ ownerId: UNVERIFIED.userId });
      });

      it('answers an unknown device like a wrong code', async () => {
        const { service, register } = setUp();
        await register();

        const unknown = await service.claim(ALICE, withCode('gw-9999'), ADDRESS).catch((error: unknown) => error);
        const wrongCode = await service.claim(ALICE, withCode('gw-0001', 'SLOW-GREEN-HERON'), ADDRESS).catch((error: unknown) => error);

        expect(unknown).toBeInstanceOf(InvalidClaimError);
        expect(unknown).toMatchObject({ code: 'INVALID_CLAIM', kind: 'unauthorized' });
        expect(wrongCode).toEqual(unknown);
      });

      it('answers an unknown device with INVALID_CLAIM even without any proof', async () => {
        const { service } = setUp();

        await expect(service.claim(ALICE, { deviceId: 'gw-9999' }, ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
      });

      it.each<[string, ClaimCommand]>([
        ['the right code', withCode()],
        ['a wrong code', withCode('gw-0001', 'SLOW-GREEN-HERON')],
        ['no proof', { deviceId: 'gw-0001' }],
      ])('answers 409 for a device owned by another account, before checking the proof (%s)', async (_proof, command) => {
        const { service, register, stored } = setUp();
        await register();
        await service.claim(ALICE, withCode(), ADDRESS);

        await expect(service.claim(BOB, command, ADDRESS)).rejects.toBeInstanceOf(DeviceAlreadyClaimedError);
        await expect(service.claim(BOB, command, ADDRESS)).rejects.toMatchObject({ code: 'DEVICE_ALREADY_CLAIMED', kind: 'conflict' });
        expect((await stored('gw-0001')).ownerId).toBe(ALICE.userId);
      });

      it('asks for the claim code of a device that has one, and never takes its device secret instead', async () => {
        const { service, register } = setUp();
        const { deviceSecret } = await register();

        await expect(service.claim(ALICE, { deviceId: 'gw-0001' }, ADDRESS)).rejects.toBeInstanceOf(ClaimCodeMissingError);
        await expect(service.claim(ALICE, { deviceId: 'gw-0001', deviceSecret }, ADDRESS)).rejects.toMatchObject({
          code: 'CLAIM_CODE_REQUIRED',
          kind: 'invalid',
          details: { errors: [{ field: 'claimCode' }] },
        });
        await expect(service.claim(ALICE, { deviceId: 'gw-0001', claimCode: 'SLOW-GREEN-HERON', deviceSecret }, ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
      });

      it('asks for the device secret of a legacy device, and never takes a claim code instead', async () => {
        const { service, registerLegacy } = setUp();
        await registerLegacy();

        await expect(service.claim(ALICE, withCode(), ADDRESS)).rejects.toBeInstanceOf(DeviceSecretRequiredError);
        await expect(service.claim(ALICE, { deviceId: 'gw-0001' }, ADDRESS)).rejects.toMatchObject({
          code: 'DEVICE_SECRET_REQUIRED',
          kind: 'invalid',
          details: { errors: [{ field: 'deviceSecret' }] },
        });
      });

      it.each([
        ['a wrong claim code', 'SLOW-GREEN-HERON'],
        ['a claim code of the wrong shape', 'QUICKAMBERFALCON'],
        ['an empty claim code', ''],
      ])('refuses %s with INVALID_CLAIM and leaves the device unclaimed', async (_case, claimCode) => {
        const { service, register, stored } = setUp();
        await register();

        await expect(service.claim(ALICE, withCode('gw-0001', claimCode), ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
        expect((await stored('gw-0001')).ownerId).toBeNull();
      });

      it('refuses a wrong device secret for a legacy device', async () => {
        const { service, registerLegacy, stored } = setUp();
        const deviceSecret = await registerLegacy();

        await expect(service.claim(ALICE, { deviceId: 'gw-0001', deviceSecret: `${deviceSecret}x` }, ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
        await expect(service.claim(ALICE, { deviceId: 'gw-0001', deviceSecret: '' }, ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
        expect((await stored('gw-0001')).ownerId).toBeNull();
      });
    });

    describe('audit', () => {
      it('records a successful claim with who, which device, from where and when', async () => {
        const { service, register, audit, clock } = setUp();
        await register();
        clock.advanceSec(5);

        await service.claim(ALICE, withCode(), ADDRESS);

        expect(audit.entries).toEqual([{ userId: ALICE.userId, deviceId: 'gw-0001', action: 'claim', outcome: 'CLAIMED', clientAddress: ADDRESS, at: clock.now() }]);
      });

      it('records a repeated claim by the owner as ALREADY_OWNED', async () => {
        const { service, register, audit } = setUp();
        await register();
        await service.claim(ALICE, withCode(), ADDRESS);

        await service.claim(ALICE, withCode(), ADDRESS);

        expect(audit.entries.map((entry) => [entry.userId, entry.action, entry.outcome])).toEqual([
          [ALICE.userId, 'claim', 'CLAIMED'],
          [ALICE.userId, 'claim', 'ALREADY_OWNED'],
        ]);
      });

      it.each<[string, CustomerPrincipal, ClaimCommand, string]>([
        ['an unverified customer', UNVERIFIED, withCode(), 'EMAIL_NOT_VERIFIED'],
        ['an unknown device', ALICE, withCode('gw-9999'), 'INVALID_CLAIM'],
        ['a wrong code', ALICE, withCode('gw-0001', 'SLOW-GREEN-HERON'), 'INVALID_CLAIM'],
        ['a missing code', ALICE, { deviceId: 'gw-0001' }, 'CLAIM_CODE_REQUIRED'],
      ])('records the refusal of %s with its code', async (_case, customer, command, outcome) => {
        const { service, register, audit } = setUp();
        await register();

        await expect(service.claim(customer, command, ADDRESS)).rejects.toMatchObject({ code: outcome });

        expect(audit.entries).toEqual([{ userId: customer.userId, deviceId: command.deviceId, action: 'claim', outcome, clientAddress: ADDRESS, at: START }]);
      });

      it('records a missing device secret and a claim of a device owned by another account', async () => {
        const { service, registerLegacy, audit } = setUp();
        const deviceSecret = await registerLegacy();

        await expect(service.claim(ALICE, { deviceId: 'gw-0001' }, ADDRESS)).rejects.toBeInstanceOf(DeviceSecretRequiredError);
        await service.claim(ALICE, { deviceId: 'gw-0001', deviceSecret }, ADDRESS);
        await expect(service.claim(BOB, { deviceId: 'gw-0001', deviceSecret }, '198.51.100.9')).rejects.toBeInstanceOf(DeviceAlreadyClaimedError);

        expect(audit.entries.map(({ userId, action, outcome, clientAddress }) => ({ userId, action, outcome, clientAddress }))).toEqual([
          { userId: ALICE.userId, action: 'claim', outcome: 'DEVICE_SECRET_REQUIRED', clientAddress: ADDRESS },
          { userId: ALICE.userId, action: 'claim', outcome: 'CLAIMED', clientAddress: ADDRESS },
          { userId: BOB.userId, action: 'claim', outcome: 'DEVICE_ALREADY_CLAIMED', clientAddress: '198.51.100.9' },
        ]);
      });
    });

    describe('failure limits', () => {
      it('blocks a device after CLAIM_MAX_FAILURES_PER_DEVICE wrong proofs, even for the right code, until the window ends', async () => {
        const { service, register, env, clock, audit } = setUp();
        await register();
        await register({ deviceId: 'gw-0002' });
        for (let i = 0; i < env.CLAIM_MAX_FAILURES_PER_DEVICE; i++) {
          const guesser = new CustomerPrincipal(`user-guess-${i}`, 'customer', true);
          await expect(service.claim(guesser, withCode('gw-0001', 'SLOW-GREEN-HERON'), ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
        }

        await expect(service.claim(ALICE, withCode(), ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
        await expect(service.claim(ALICE, withCode(), ADDRESS)).rejects.toMatchObject({ code: 'RATE_LIMITED', details: { retryAfterSec: env.CLAIM_FAILURE_WINDOW_SEC } });
        expect(audit.last()).toMatchObject({ userId: ALICE.userId, deviceId: 'gw-0001', action: 'claim', outcome: 'RATE_LIMITED' });
        await expect(service.claim(ALICE, withCode('gw-0002'), ADDRESS)).resolves.toMatchObject({ ownerId: ALICE.userId });

        clock.advanceSec(env.CLAIM_FAILURE_WINDOW_SEC);
        await expect(service.claim(ALICE, withCode(), ADDRESS)).resolves.toMatchObject({ ownerId: ALICE.userId });
      });

      it('blocks a customer after CLAIM_MAX_FAILURES_PER_CUSTOMER failures across devices; other customers still claim', async () => {
        const { service, register, env, audit } = setUp();
        await register();
        for (let i = 0; i < env.CLAIM_MAX_FAILURES_PER_CUSTOMER; i++) {
          await expect(service.claim(ALICE, withCode(`gw-guess-${i}`), ADDRESS)).rejects.toBeInstanceOf(InvalidClaimError);
        }

        await expect(service.claim(ALICE, withCode(), ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
        expect(audit.last()).toMatchObject({ userId: ALICE.userId, deviceId: 'gw-0001', outcome: 'RATE_LIMITED' });
        await expect(service.claim(BOB, withCode(), ADDRESS)).resolves.toMatchObject({ ownerId: BOB.userId });
      });

      it('does not count a device owned by another account as a failed guess', async () => {
        const { service, register, env } = setUp();
        await register();
        await register({ deviceId: 'gw-0002' });
        await service.claim(BOB, withCode('gw-0002'), ADDRESS);
        for (let i = 0; i < env.CLAIM_MAX_FAILURES_PER_DEVICE; i++) {
          await expect(service.claim(ALICE, withCode('gw-0002'), ADDRESS)).rejects.toBeInstanceOf(DeviceAlreadyClaimedError);
        }

        await expect(service.claim(ALICE, withCode(), ADDRESS)).resolves.toMatchObject({ ownerId: ALICE.userId });
      });

      it('counts the wrong kind of proof like a wrong code, keeping its 400: a secret or nothing for a device with a claim code, a code for a legacy device', async () => {
        const { service, register, registerLegacy, env } = setUp();
        const { deviceSecret } = await register({ deviceId: 'gw-0002' });
        await registerLegacy();
        for (let i = 0; i < env.CLAIM_MAX_FAILURES_PER_DEVICE; i++) {
          const wrongKind = i % 2 === 0 ? { deviceId: 'gw-0002', deviceSecret } : { deviceId: 'gw-0002' };
          await expect(service.claim(ALICE, wrongKind, ADDRESS)).rejects.toBeInstanceOf(ClaimCodeMissingError);
          await expect(service.claim(ALICE, withCode('gw-0001'), ADDRESS)).rejects.toBeInstanceOf(DeviceSecretRequiredError);
        }

        await expect(service.claim(ALICE, withCode('gw-0002'), ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
        await expect(service.claim(BOB, withCode('gw-0001'), ADDRESS)).rejects.toBeInstanceOf(RateLimitedError);
      });
    });
  });

  describe('release', () => {
    it('lets the owner give the device up, and records it', async () => {
      const { service, register, audit, clock, stored } = setUp();
      await register();
      await service.claim(ALICE, withCode(), ADDRESS);
      clock.advanceSec(60);

      await service.release(ALICE, 'gw-0001', ADDRESS);

      expect((await stored('gw-0001')).toState()).toMatchObject({ ownerId: null, claimedAt: null });
      expect(await service.listDevices(ALICE, 50)).toEqual({ items: [], nextCursor: null });
      expect(audit.last()).toEqual({ userId: ALICE.userId, deviceId: 'gw-0001', action: 'release', outcome: 'RELEASED', clientAddress: ADDRESS, at: clock.now() });
    });

    it('records device.released for the owner who released, and nothing for a refused release', async () => {
      const { service, register, events, clock } = setUp();
      await register();
      await service.claim(ALICE, withCode(), ADDRESS);
      clock.advanceSec(60);

      await expect(service.release(BOB, 'gw-0001', ADDRESS)).rejects.toBeInstanceOf(NotFoundError);
      await service.release(ALICE, 'gw-0001', ADDRESS);

      expect(events.recorded.map((event) => event.type)).toEqual(['device.claimed', 'device.released']);
      expect(events.recorded[1]).toEqual({ type: 'device.released', deviceId: 'gw-0001', ownerId: ALICE.userId, occurredAt: clock.now(), data: {} });
    });

    it.each<[string, string]>([
      ['owned by another account', 'gw-0001'],
      ['unknown', 'gw-9999'],
    ])('answers NOT_FOUND for a device %s, changing nothing', async (_case, deviceId) => {
      const { service, register, audit, stored } = setUp();
      await register();
      await service.claim(ALICE, withCode(), ADDRESS);

      await expect(service.release(BOB, deviceId, ADDRESS)).rejects.toBeInstanceOf(NotFoundError);

      expect((await stored('gw-0001')).ownerId).toBe(ALICE.userId);
      expect(audit.last()).toMatchObject({ userId: BOB.userId, deviceId, action: 'release', outcome: 'NOT_FOUND' });
    });

    it('lets another customer claim the device afterwards, seeing its history from the release on', async () => {
      const { service, register, clock, stored } = setUp();
      await register();
      await service.claim(ALICE, withCode(), ADDRESS);
      clock.advanceSec(3600);
      const releasedAt = clock.now();
      await service.release(ALICE, 'gw-0001', ADDRESS);
      clock.advanceSec(600);

      const ownership = await service.claim(BOB, withCode(), ADDRESS);

      expect(ownership).toEqual({ deviceId: 'gw-0001', ownerId: BOB.userId, claimedAt: clock.now() });
      expect((await stored('gw-0001')).toState()).toMatchObject({ ownerId: BOB.userId, claimedAt: clock.now(), visibleSince: releasedAt });
      await expect(service.release(ALICE, 'gw-0001', ADDRESS)).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe('openReRegistration', () => {
    it('lets the owner open the window for RE_REGISTRATION_WINDOW_SEC, and records it', async () => {
      const { service, register, env, audit, stored } = setUp();
      await register();
      await service.claim(ALICE, withCode(), ADDRESS);

      const until = await service.openReRegistration(ALICE, 'gw-0001', ADDRESS);

      expect(until).toEqual(new Date(START.getTime() + env.RE_REGISTRATION_WINDOW_SEC * 1000));
      expect((await stored('gw-0001')).reRegistrationUntil).toEqual(until);
      expect(audit.last()).toEqual({ userId: ALICE.userId, deviceId: 'gw-0001', action: 're-registration', outcome: 'RE_REGISTRATION_OPENED', clientAddress: ADDRESS, at: START });
    });

    it.each<[string, boolean]>([
      ['claimed by a customer', true],
      ['not claimed', false],
    ])('lets an administrator open the window of a device %s', async (_case, claimed) => {
      const { service, register, stored } = setUp();
      await register();
      if (claimed) await service.claim(ALICE, withCode(), ADDRESS);

      const until = await service.openReRegistration(ADMIN, 'gw-0001', ADDRESS);

      expect((await stored('gw-0001')).reRegistrationUntil).toEqual(until);
    });

    it.each<[string, CustomerPrincipal, string]>([
      ['another customer, for a claimed device', BOB, 'gw-0001'],
      ['a customer, for an unclaimed device', BOB, 'gw-0002'],
      ['an administrator, for an unknown device', ADMIN, 'gw-9999'],
    ])('answers NOT_FOUND to %s, changing nothing', async (_case, customer, deviceId) => {
      const { service, register, audit, stored } = setUp();
      await register();
      await register({ deviceId: 'gw-0002' });
      await service.claim(ALICE, withCode(), ADDRESS);

      await expect(service.openReRegistration(customer, deviceId, ADDRESS)).rejects.toBeInstanceOf(NotFoundError);

      expect((await stored('gw-0001')).reRegistrationUntil).toBeNull();
      expect((await stored('gw-0002')).reRegistrationUntil).toBeNull();
      expect(audit.last()).toMatchObject({ userId: customer.userId, deviceId, action: 're-registration', outcome: 'NOT_FOUND' });
    });
  });
});
