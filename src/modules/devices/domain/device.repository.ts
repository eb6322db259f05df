import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { Device } from './device.js';
import type { DeviceLabelsPatch } from './device-labels.js';

export interface SilentDevice {
  deviceId: string;
  ownerId: string | null;
  lastTelemetryAt: Date;
}

/** A device marked offline whose telemetry arrived again. */
export interface ReturnedDevice {
  deviceId: string;
  ownerId: string | null;
  offlineSince: Date;
}

/** A page of an owner's devices: keyset on (claimedAt descending, deviceId). */
export interface OwnedDevicesPage {
  limit: number;
  after?: { claimedAt: Date; deviceId: string };
}

/** Runs in the transaction of an ownership change, to record what reports it (the event log). */
export type OwnershipChanged = (tx: SqlRunner) => Promise<void>;

/** What an ownership change by an administrator found: whether it changed anything, and whose the device was. */
export interface AdminChange {
  changed: boolean;
  previousOwnerId: string | null;
}

/** Runs in the transaction of an administrator's change, with whose the device was before it. */
export type AdminChanged = (tx: SqlRunner, previousOwnerId: string | null) => Promise<void>;

/** Port for device persistence. The abstract class doubles as the injection token. */
export abstract class DeviceRepository {
  abstract findById(deviceId: string): Promise<Device | null>;
  /** Inserts the device unless the id is taken; returns false when it was. */
  abstract insertIfAbsent(device: Device): Promise<boolean>;
  /**
   * Runs `change` on the device's row locked against concurrent changes, and stores the result
   * when `change` returns true (then `onChanged` runs in the same transaction). Returns the device
   * as seen under the lock (null if absent).
   */
  abstract updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean, onChanged?: OwnershipChanged): Promise<Device | null>;
  /** Records the first use of the current credentials (idempotent). */
  abstract markCredentialsUsed(deviceId: string, now: Date): Promise<void>;

  /**
   * Gives the device to `ownerId` if nobody owns it, or returns the existing ownership if
   * `ownerId` already does; null when someone else owns it. `onClaimed` runs in the same
   * transaction when the device changed hands (not when `ownerId` had it already). One conditional UPDATE, so two
   * concurrent claimers cannot both win.
   */
  abstract claimIfUnowned(deviceId: string, ownerId: string, now: Date, onClaimed?: OwnershipChanged): Promise<{ ownerId: string; claimedAt: Date } | null>;
  /**
   * Clears the ownership, and with it the owner's name and tags of the device, if `ownerId` holds it; false otherwise. `onReleased` runs in the same
   * transaction: its own, or `within` when given (an account deletion releasing all its devices).
   */
  abstract releaseIfOwnedBy(deviceId: string, ownerId: string, now: Date, onReleased?: OwnershipChanged, within?: SqlRunner): Promise<boolean>;
  /** Within `tx`: the ids of the devices `ownerId` holds, locked until `tx` ends. */
  abstract lockOwnedBy(ownerId: string, tx: SqlRunner): Promise<string[]>;
  /**
   * Changes the device's name and tags if it still has the owner `ownerId` (null: nobody) that the
   * permission check saw; false otherwise (gone, or changed hands since), and nothing changed.
   */
  abstract relabelIfOwnedBy(deviceId: string, ownerId: string | null, patch: DeviceLabelsPatch, onRelabeled?: OwnershipChanged): Promise<boolean>;
  /**
   * Gives the device to `ownerId` whoever had it, as a claim would: a new owner sees history from
   * this moment on (from the last release when nobody owned it), the previous owner's name and
   * tags go. Unchanged when `ownerId` owns it already; null when the device does not exist.
   * `onTransferred` runs in the same transaction when it changed hands.
   */
  abstract transferTo(deviceId: string, ownerId: string, now: Date, onTransferred?: AdminChanged): Promise<(AdminChange & { claimedAt: Date }) | null>;
  /**
   * Takes the device out of service, once: ownership released, secret replaced by `secretHash`
   * (which nobody holds), every token void, registration refused until reopen. Null when the
   * device does not exist; `onDecommissioned` runs in the same transaction when it changed.
   */
  abstract decommission(deviceId: string, now: Date, secretHash: string, onDecommissioned?: AdminChanged): Promise<(AdminChange & { decommissionedAt: Date }) | null>;
  /**
   * Ends a decommission and opens the re-registration window until `until`, so the gateway can
   * register again with the same id and hardware. Unchanged (and no window) when it is not
   * decommissioned; null when the device does not exist.
   */
  abstract reopen(deviceId: string, until: Date, onReopened?: OwnershipChanged): Promise<{ changed: boolean; openUntil: Date | null } | null>;
  /** Devices of `ownerId`, most recently claimed first (then by deviceId), after the position `after`. */
  abstract listOwnedBy(ownerId: string, page: OwnedDevicesPage): Promise<Device[]>;
  /**
   * Marks offline, as of `now`, every device no longer online by isDeviceOnline (device-online.ts),
   * with its telemetry interval (its override, else `defaultIntervalSec`); `onOffline` runs in the same transaction
   * with the devices marked. A device without telemetry yet is never marked.
   */
  abstract markSilentOffline(now: Date, defaultIntervalSec: number, onOffline: (tx: SqlRunner, devices: SilentDevice[]) => Promise<void>): Promise<number>;
  /**
   * Clears the offline mark of those of `deviceIds` still marked (their telemetry arrived again);
   * `onBack` runs in the same transaction with the devices cleared.
   */
  abstract markBackOnline(deviceIds: string[], onBack: (tx: SqlRunner, devices: ReturnedDevice[]) => Promise<void>): Promise<number>;
}
