import { Device, type DeviceState, type RegistrationRetry } from './device.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';

const REGISTERED_AT = new Date('2026-11-21T12:00:00.000Z');
const WINDOW_SEC = 600;

function aDeviceState(overrides: Partial<DeviceState> = {}): DeviceState {
  return {
    deviceId: 'gw-0001',
    hardwareId: 'esp32s3-7c:df:a1:0b:22:c4',
    firmwareVersion: '0.1.4',
    claimCodeHash: '$argon2id$stand-in',
    secretHash: 'a'.repeat(64),
    tokenVersion: 1,
    registeredAt: REGISTERED_AT,
    credentialsIssuedAt: REGISTERED_AT,
    credentialsUsedAt: null,
    lastSeenAt: null,
    ownerId: null,
    claimedAt: null,
    reRegistrationUntil: null,
    visibleSince: null,
    decommissionedAt: null,
    config: { overrides: {}, revision: 0, updatedAt: null },
    appliedConfigVersion: null,
    configAppliedAt: null,
    ...overrides,
  };
}

function aRetry(overrides: Partial<RegistrationRetry> = {}): RegistrationRetry {
  return {
    hardwareId: 'esp32s3-7c:df:a1:0b:22:c4',
    claimCodeMatches: true,
    now: new Date(REGISTERED_AT.getTime() + 60_000),
    windowSec: WINDOW_SEC,
    ...overrides,
  };
}

const secondsAfterRegistration = (seconds: number) => new Date(REGISTERED_AT.getTime() + seconds * 1000);

describe('Device', () => {
  describe('create', () => {
    it('starts at token version 1, unused, unowned, with the given identity and hashes', () => {
      const device = Device.create({
        deviceId: 'gw-0001',
        hardwareId: 'hw-1',
        firmwareVersion: FirmwareVersion.parse('0.1.10'),
        claimCodeHash: '$argon2id$stand-in',
        secretHash: 'b'.repeat(64),
        now: REGISTERED_AT,
      });

      expect(device.toState()).toEqual<DeviceState>({
        deviceId: 'gw-0001',
        hardwareId: 'hw-1',
        firmwareVersion: '0.1.10',
        claimCodeHash: '$argon2id$stand-in',
        secretHash: 'b'.repeat(64),
        tokenVersion: 1,
        registeredAt: REGISTERED_AT,
        credentialsIssuedAt: REGISTERED_AT,
        credentialsUsedAt: null,
        lastSeenAt: null,
        ownerId: null,
        claimedAt: null,
        reRegistrationUntil: null,
        visibleSince: null,
        config: { overrides: {}, revision: 0, updatedAt: null },
        appliedConfigVersion: null,
        configAppliedAt: null,
        decommissionedAt: null,
      });
      expect(device.firmwareVersion.compareTo(FirmwareVersion.parse('0.1.10'))).toBe(0);
      expect(device.isClaimed).toBe(false);
      expect(device.isLegacy).toBe(false);
    });

    it('is legacy when registered without a claim code', () => {
      const device = Device.create({
        deviceId: 'gw-0002',
        hardwareId: 'hw-2',
        firmwareVersion: FirmwareVersion.parse('0.1.3'),
        claimCodeHash: null,
        secretHash: 'b'.repeat(64),
        now: REGISTERED_AT,
      });

      expect(device.isLegacy).toBe(true);
    });
  });

  describe('restore', () => {
    it('does not share state with the object it was restored from', () => {
      const state = aDeviceState();
      const device = Device.restore(state);
      device.revokeTokens();

      expect(state.tokenVersion).toBe(1);
      expect(device.toState()).not.toBe(device.toState());
    });
  });

  describe('acceptsRegistrationRetry', () => {
    it('accepts the same hardware with a matching claim code, unused credentials, inside the window', () => {
      expect(Device.restore(aDeviceState()).acceptsRegistrationRetry(aRetry())).toBe(true);
    });

    it('refuses other hardware', () => {
      expect(Device.restore(aDeviceState()).acceptsRegistrationRetry(aRetry({ hardwareId: 'esp32s3-00:00:00:00:00:00' }))).toBe(false);
    });

    it('refuses a claim code that does not match', () => {
      expect(Device.restore(aDeviceState()).acceptsRegistrationRetry(aRetry({ claimCodeMatches: false }))).toBe(false);
    });

    it('refuses once the credentials were used', () => {
      const used = Device.restore(aDeviceState({ credentialsUsedAt: secondsAfterRegistration(10) }));

      expect(used.acceptsRegistrationRetry(aRetry())).toBe(false);
    });

    it('accepts exactly at the end of the window and refuses a millisecond later', () => {
      const device = Device.restore(aDeviceState());

      expect(device.acceptsRegistrationRetry(aRetry({ now: secondsAfterRegistration(WINDOW_SEC) }))).toBe(true);
      expect(device.acceptsRegistrationRetry(aRetry({ now: secondsAfterRegistration(WINDOW_SEC + 0.001) }))).toBe(false);
    });

    it('accepts at the very moment of registration', () => {
      expect(Device.restore(aDeviceState()).acceptsRegistrationRetry(aRetry({ now: REGISTERED_AT }))).toBe(true);
    });

    it('refuses a retry dated before the registration (clock skew)', () => {
      expect(Device.restore(aDeviceState()).acceptsRegistrationRetry(aRetry({ now: secondsAfterRegistration(-0.001) }))).toBe(false);
    });

    it('refuses everything with a window of zero except the same instant', () => {
      const device = Device.restore(aDeviceState());

      expect(device.acceptsRegistrationRetry(aRetry({ windowSec: 0, now: REGISTERED_AT }))).toBe(true);
      expect(device.acceptsRegistrationRetry(aRetry({ windowSec: 0, now: secondsAfterRegistration(1) }))).toBe(false);
    });
  });

  describe('replaceCredentials', () => {
    it('stores the new secret hash, bumps the token version and restamps the issue time', () => {
      const device = Device.restore(aDeviceState({ secretHash: 'a'.repeat(64), tokenVersion: 3 }));
      const now = secondsAfterRegistration(30);

      device.replaceCredentials('c'.repeat(64), now);

      expect(device.secretHash).toBe('c'.repeat(64));
      expect(device.tokenVersion).toBe(4);
      expect(device.toState().credentialsIssuedAt).toEqual(now);
      expect(device.registeredAt).toEqual(REGISTERED_AT);
    });
  });

  describe('revokeTokens', () => {
    it('bumps the token version and keeps the secret', () => {
      const device = Device.restore(aDeviceState({ secretHash: 'a'.repeat(64), tokenVersion: 2 }));

      device.revokeTokens();

      expect(device.tokenVersion).toBe(3);
      expect(device.secretHash).toBe('a'.repeat(64));
    });
  });

  describe('isLegacy / isClaimed', () => {
    it('is legacy only without a claim code hash', () => {
      expect(Device.restore(aDeviceState({ claimCodeHash: null })).isLegacy).toBe(true);
      expect(Device.restore(aDeviceState()).isLegacy).toBe(false);
    });

    it('is claimed only with an owner', () => {
      expect(Device.restore(aDeviceState({ ownerId: '7d0c2f5e-9a6b-4a57-8f43-0d2b4c1f9e11', claimedAt: secondsAfterRegistration(5) })).isClaimed).toBe(true);
      expect(Device.restore(aDeviceState()).isClaimed).toBe(false);
    });
  });
});
