import { Device, type DeviceState } from '../../../src/modules/devices/domain/device.js';
import { DeviceSnapshotQueries, type DeviceSnapshot } from '../../../src/modules/devices/domain/device-snapshot.queries.js';
import type { DeviceLabels, DeviceLabelsPatch } from '../../../src/modules/devices/domain/device-labels.js';
import { DeviceRepository, type AdminChange, type AdminChanged, type OwnedDevicesPage, type OwnershipChanged } from '../../../src/modules/devices/domain/device.repository.js';

/** There is no SQL here: an event log given this transaction must not use it. */
const NO_SQL = { rows: () => Promise.reject(new Error('the in-memory repository has no SQL transaction')) };

/**
 * DeviceRepository for unit tests. Stores copies of the state, as a database would, so a test sees
 * only what the service saved; `updateLocked` runs the changes of one device one after another.
 */
export class InMemoryDeviceRepository extends DeviceRepository {
  private readonly devices = new Map<string, DeviceState>();
  private readonly lastReleasedAt = new Map<string, Date>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly labels = new Map<string, DeviceLabels>();

  /** The device's name and tags as stored (none: unnamed, untagged). */
  labelsOf(deviceId: string): DeviceLabels {
    return this.labels.get(deviceId) ?? { name: null, tags: [] };
  }

  async findById(deviceId: string): Promise<Device | null> {
    const state = this.devices.get(deviceId);
    return state ? Device.restore(state) : null;
  }

  async insertIfAbsent(device: Device): Promise<boolean> {
    if (this.devices.has(device.deviceId)) return false;
    this.devices.set(device.deviceId, device.toState());
    return true;
  }

  async updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean, onChanged?: OwnershipChanged): Promise<Device | null> {
    const previous = this.locks.get(deviceId) ?? Promise.resolve();
    const work = previous.then(async () => {
      const state = this.devices.get(deviceId);
      if (!state) return null;
      const device = Device.restore(state);
      if (await change(device)) {
        await onChanged?.(NO_SQL);
        this.devices.set(deviceId, device.toState());
      }
      return device;
    });
    this.locks.set(deviceId, work.catch(() => undefined));
    return work;
  }

  async markCredentialsUsed(deviceId: string, now: Date): Promise<void> {
    const state = this.devices.get(deviceId);
    if (state && state.credentialsUsedAt === null) this.devices.set(deviceId, { ...state, credentialsUsedAt: now });
  }

  async claimIfUnowned(deviceId: string, ownerId: string, now: Date, onClaimed?: OwnershipChanged): Promise<{ ownerId: string; claimedAt: Date } | null> {
    const state = this.devices.get(deviceId);
    if (!state || (state.ownerId !== null && state.ownerId !== ownerId)) return null;
    if (state.ownerId === null) {
      await onClaimed?.(NO_SQL);
      this.devices.set(deviceId, { ...state, ownerId, claimedAt: now, visibleSince: this.lastReleasedAt.get(deviceId) ?? null });
    }
    const current = this.devices.get(deviceId)!;
    return { ownerId, claimedAt: current.claimedAt ?? now };
  }

  async releaseIfOwnedBy(deviceId: string, ownerId: string, now: Date, onReleased?: OwnershipChanged): Promise<boolean> {
    const state = this.devices.get(deviceId);
    if (!state || state.ownerId !== ownerId) return false;
    await onReleased?.(NO_SQL);
    this.devices.set(deviceId, { ...state, ownerId: null, claimedAt: null, visibleSince: null, reRegistrationUntil: null });
    this.lastReleasedAt.set(deviceId, now);
    this.labels.delete(deviceId);
    return true;
  }

  async relabelIfOwnedBy(deviceId: string, ownerId: string | null, patch: DeviceLabelsPatch, onRelabeled?: OwnershipChanged): Promise<boolean> {
    const state = this.devices.get(deviceId);
    if (!state || state.ownerId !== ownerId) return false;
    await onRelabeled?.(NO_SQL);
    this.labels.set(deviceId, { ...this.labelsOf(deviceId), ...patch });
    return true;
  }

  async lockOwnedBy(ownerId: string): Promise<string[]> {
    return [...this.devices.values()].filter((state) => state.ownerId === ownerId).map((state) => state.deviceId).sort();
  }

  async transferTo(deviceId: string, ownerId: string, now: Date, onTransferred?: AdminChanged): Promise<(AdminChange & { claimedAt: Date }) | null> {
    const state = this.devices.get(deviceId);
    if (!state) return null;
    if (state.ownerId === ownerId) return { changed: false, previousOwnerId: ownerId, claimedAt: state.claimedAt ?? now };
    await onTransferred?.(NO_SQL, state.ownerId);
    if (state.ownerId !== null) this.lastReleasedAt.set(deviceId, now);
    this.devices.set(deviceId, { ...state, ownerId, claimedAt: now, visibleSince: this.lastReleasedAt.get(deviceId) ?? null, reRegistrationUntil: null });
    this.labels.delete(deviceId);
    return { changed: true, previousOwnerId: state.ownerId, claimedAt: now };
  }

  async decommission(deviceId: string, now: Date, secretHash: string, onDecommissioned?: AdminChanged): Promise<(AdminChange & { decommissionedAt: Date }) | null> {
    const state = this.devices.get(deviceId);
    if (!state) return null;
    if (state.decommissionedAt) return { changed: false, previousOwnerId: state.ownerId, decommissionedAt: state.decommissionedAt };
    await onDecommissioned?.(NO_SQL, state.ownerId);
    this.devices.set(deviceId, {
      ...state,
      decommissionedAt: now,
      ownerId: null,
      claimedAt: null,
      visibleSince: null,
      reRegistrationUntil: null,
      secretHash,
      tokenVersion: state.tokenVersion + 1,
    });
    this.lastReleasedAt.set(deviceId, now);
    this.labels.delete(deviceId);
    return { changed: true, previousOwnerId: state.ownerId, decommissionedAt: now };
  }

  async reopen(deviceId: string, until: Date, onReopened?: OwnershipChanged): Promise<{ changed: boolean; openUntil: Date | null } | null> {
    const state = this.devices.get(deviceId);
    if (!state) return null;
    if (!state.decommissionedAt) return { changed: false, openUntil: state.reRegistrationUntil };
    await onReopened?.(NO_SQL);
    this.devices.set(deviceId, { ...state, decommissionedAt: null, reRegistrationUntil: until });
    return { changed: true, openUntil: until };
  }

  async markSilentOffline(): Promise<number> {
    throw new Error('the in-memory repository keeps no telemetry times');
  }

  async markBackOnline(): Promise<number> {
    throw new Error('the in-memory repository keeps no telemetry times');
  }

  async listOwnedBy(ownerId: string, page: OwnedDevicesPage): Promise<Device[]> {
    const claimedAt = (state: DeviceState) => state.claimedAt?.getTime() ?? 0;
    const after = page.after && { claimedAt: page.after.claimedAt.getTime(), deviceId: page.after.deviceId };
    return [...this.devices.values()]
      .filter((state) => state.ownerId === ownerId)
      .filter((state) => !after || claimedAt(state) < after.claimedAt || (claimedAt(state) === after.claimedAt && state.deviceId > after.deviceId))
      .sort((a, b) => claimedAt(b) - claimedAt(a) || (a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0))
      .slice(0, page.limit)
      .map((state) => Device.restore(state));
  }
}

/** DeviceSnapshotQueries for unit tests: the snapshot of what the in-memory repository holds. */
export class InMemoryDeviceSnapshotSource extends DeviceSnapshotQueries {
  constructor(private readonly devices: InMemoryDeviceRepository) {
    super();
  }

  async load(deviceId: string): Promise<DeviceSnapshot | null> {
    return (await this.devices.findById(deviceId))?.toSnapshot() ?? null;
  }
}
