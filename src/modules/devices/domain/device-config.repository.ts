import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { ConfigPatch, DeviceConfigState } from './device-config.js';

/** Port for a device's configuration columns. The abstract class doubles as the injection token. */
export abstract class DeviceConfigRepository {
  /**
   * Applies the patch with the row locked; `precondition` sees the state before the change (If-Match)
   * and may refuse. The revision grows only when an override really changed, and then `onChanged`
   * runs in the same transaction. Null when the device does not exist.
   */
  abstract patchOverrides(
    deviceId: string,
    patch: ConfigPatch,
    now: Date,
    precondition: (current: DeviceConfigState) => void,
    onChanged?: (tx: SqlRunner) => Promise<void>,
  ): Promise<DeviceConfigState | null>;
  /**
   * Keeps the highest version the gateway confirmed and when it first confirmed it. `onApplied`
   * runs in the same transaction when the version moved up, with the device's owner.
   */
  abstract recordApplied(deviceId: string, version: number, now: Date, onApplied?: (tx: SqlRunner, ownerId: string | null) => Promise<void>): Promise<void>;
}
