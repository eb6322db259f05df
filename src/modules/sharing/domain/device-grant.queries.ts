import type { DeviceGrant, DeviceViewer } from './device-share.js';

/** What a viewer is to a device, by the one visibility rule (VISIBLE_DEVICES, sql-api.ts). */
export abstract class DeviceGrantQueries {
  /** The viewer's grant on the device, or null when they cannot see it (or it does not exist). */
  abstract grantOf(viewer: DeviceViewer, deviceId: string): Promise<DeviceGrant | null>;
}
