import { randomBytes } from 'node:crypto';
import { Device } from '../../src/modules/devices/domain/device.js';
import { DeviceRepository } from '../../src/modules/devices/domain/device.repository.js';
import { FirmwareVersion } from '../../src/shared/kernel/firmware-version.js';
import { createTestApp, type TestApp } from '../support/create-test-app.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const LATER = new Date('2026-11-22T08:30:00.000Z');

/**
 * Every way the domain can change a device, applied through updateLocked. The two lists below
 * name every method of Device: a new one fails the first test until it is classified, and a new
 * mutator must show here that updateLocked stores all it changes.
 */
const MUTATIONS: Record<string, (device: Device) => void> = {
  replaceCredentials: (device) => device.replaceCredentials('b'.repeat(64), LATER),
  openReRegistration: (device) => device.openReRegistration(LATER),
  reRegister: (device) => device.reRegister({ secretHash: 'c'.repeat(64), claimCodeHash: '$argon2id$v=19$m=7168,t=5,p=1$cmVyZWdpc3Rlcg$AAAA', firmwareVersion: FirmwareVersion.parse('0.3.1'), now: LATER }),
  setClaimCode: (device) => device.setClaimCode('$argon2id$v=19$m=7168,t=5,p=1$c2V0Y2xhaW0$BBBB'),
  revokeTokens: (device) => device.revokeTokens(),
};
const QUERIES = ['acceptsRegistrationRetry', 'acceptsReRegistration', 'toState', 'toSnapshot'];

describe('DeviceRepository.updateLocked stores every change the domain can make', () => {
  let t: TestApp;
  let repository: DeviceRepository;

  beforeAll(async () => {
    t = await createTestApp();
    repository = t.app.get(DeviceRepository);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function aStoredDevice({ legacy }: { legacy: boolean }): Promise<Device> {
    const device = Device.create({
      deviceId: `gw-${randomBytes(4).toString('hex')}`,
      hardwareId: 'hw-repository',
      firmwareVersion: FirmwareVersion.parse(legacy ? '0.1.3' : '0.1.4'),
      claimCodeHash: legacy ? null : '$argon2id$v=19$m=7168,t=5,p=1$Y3JlYXRl$CCCC',
      secretHash: 'a'.repeat(64),
      now: NOW,
    });
    expect(await repository.insertIfAbsent(device)).toBe(true);
    return device;
  }

  it('knows every method of Device as a mutation or a query', () => {
    const methods = Object.entries(Object.getOwnPropertyDescriptors(Device.prototype))
      .filter(([name, descriptor]) => name !== 'constructor' && typeof descriptor.value === 'function')
      .map(([name]) => name)
      .sort();

    expect(methods).toEqual([...Object.keys(MUTATIONS), ...QUERIES].sort());
  });

  it.each(Object.keys(MUTATIONS))('%s: what updateLocked returns is what a later read finds, and it changed something', async (name) => {
    const device = await aStoredDevice({ legacy: name === 'setClaimCode' });
    const before = device.toState();

    const changed = await repository.updateLocked(device.deviceId, (current) => {
      MUTATIONS[name](current);
      return true;
    });

    expect(changed).not.toBeNull();
    expect(changed!.toState()).not.toEqual(before);
    expect((await repository.findById(device.deviceId))!.toState()).toEqual(changed!.toState());
  });

  it('stores nothing when the change says so', async () => {
    const device = await aStoredDevice({ legacy: false });

    await repository.updateLocked(device.deviceId, (current) => {
      current.revokeTokens();
      return false;
    });

    expect((await repository.findById(device.deviceId))!.toState()).toEqual(device.toState());
  });
});
