import type { Device } from './device.js';

/** Port for device persistence. The abstract class doubles as the injection token. */
export abstract class DeviceRepository {
  abstract findById(deviceId: string): Promise<Device | null>;
  /** Inserts the device unless the id is taken; returns false when it was. */
  abstract insertIfAbsent(device: Device): Promise<boolean>;
  /**
   * Runs `change` on the device's row locked against concurrent changes, and stores the result
   * when `change` returns true. Returns the device as seen under the lock (null if absent).
   */
  abstract updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean): Promise<Device | null>;
  /** Records the first use of the current credentials (idempotent). */
  abstract markCredentialsUsed(deviceId: string, now: Date): Promise<void>;

  /**
   * Gives the device to `ownerId` if nobody owns it, or returns the existing ownership if
   * `ownerId` already does; null when someone else owns it. One conditional UPDATE, so two
   * concurrent claimers cannot both win.
   */
  abstract claimIfUnowned(deviceId: string, ownerId: string, now: Date): Promise<{ ownerId: string; claimedAt: Date } | null>;
  /** Clears the ownership if `ownerId` holds it; false otherwise. */
  abstract releaseIfOwnedBy(deviceId: string, ownerId: string, now: Date): Promise<boolean>;
  abstract listOwnedBy(ownerId: string): Promise<Device[]>;
}
