import type { ConfigOverrides } from '../../devices/index.js';

export interface Viewer {
  userId: string;
  isAdmin: boolean;
}

/** Whether a viewer sees a device at all, and from when on its history (a later owner's view starts at their claim). */
export interface DeviceVisibilityRow {
  visible_since: Date | null;
}

export interface DeviceSummaryRow extends DeviceVisibilityRow {
  device_id: string;
  hardware_id: string;
  firmware_version: string;
  owner_id: string | null;
  owner_email: string | null;
  claimed_at: Date | null;
  last_seen_at: Date | null;
  config_overrides: ConfigOverrides;
  config_revision: number;
  applied_config_version: number | null;
  config_applied_at: Date | null;
  latest: Array<{ batteryId: string; metric: string; ts: string; value: number }> | null;
}

/**
 * The dashboard's device screens, read as response-shaped rows. Every method answers only devices
 * the viewer sees (their own; every device for an administrator); a device they cannot see is null
 * or absent, exactly like one that does not exist.
 */
export abstract class DashboardQueries {
  abstract device(viewer: Viewer, deviceId: string): Promise<DeviceSummaryRow | null>;

  /** The visibility check alone, for screens that show no summary (history, configuration). */
  abstract visibility(viewer: Viewer, deviceId: string): Promise<DeviceVisibilityRow | null>;

  /** Visible devices ordered by deviceId, those after `after` only, at most `limit`. */
  abstract devices(viewer: Viewer, limit: number, after: string | undefined): Promise<DeviceSummaryRow[]>;
}
