import type { DeviceConfigState } from './device-config.js';
import type { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';

/**
 * What the device-facing hot paths (token check, config and OTA polls) read of a device, kept in
 * memory by DeviceSnapshots. It holds exactly the columns whose change the database announces on
 * the change feed (trigger `devices_announce_change`) and the two that never change (device_id,
 * registered_at), so a cached snapshot can never miss a change. A field added here needs its
 * column in that trigger (test/e2e/device-snapshot.e2e-spec.ts compares the two).
 */
export interface DeviceSnapshot {
  readonly deviceId: string;
  readonly registeredAt: Date;
  readonly hardwareId: string;
  readonly firmwareVersion: FirmwareVersion;
  readonly tokenVersion: number;
  /** Whether the current credentials were used (login, refresh or a call); the time is not cached. */
  readonly credentialsUsed: boolean;
  readonly config: DeviceConfigState;
  /** The owner's labels (normalised): firmware campaigns target them. */
  readonly tags: readonly string[];
}

/** Port: loads one device's snapshot from storage (on a cache miss). */
export abstract class DeviceSnapshotQueries {
  abstract load(deviceId: string): Promise<DeviceSnapshot | null>;
}
