import type { ConfigOverrides } from '../../devices/index.js';
import type { DeviceRole } from '../../sharing/index.js';

export interface Viewer {
  userId: string;
  isAdmin: boolean;
}

/** Whether a viewer sees a device at all, and from when on its history (a later owner's view starts at their claim). */
export interface DeviceVisibilityRow {
  visible_since: Date | null;
  /** What the viewer is to the device: owner, admin, or the role of their share. */
  access: DeviceRole;
}

export interface DeviceSummaryRow extends DeviceVisibilityRow {
  device_id: string;
  hardware_id: string;
  firmware_version: string;
  owner_id: string | null;
  owner_email: string | null;
  claimed_at: Date | null;
  last_seen_at: Date | null;
  last_telemetry_at: Date | null;
  config_overrides: ConfigOverrides;
  config_revision: number;
  applied_config_version: number | null;
  config_applied_at: Date | null;
  latest: Array<{ batteryId: string; metric: string; ts: string; value: number }> | null;
  name: string | null;
  tags: string[];
}

/** Who may change a device, and the owner the check saw (a change applies only while it still has that owner). */
export interface DeviceManagerRow {
  owner_id: string | null;
  access: DeviceRole;
}

/**
 * Conditions of the device list, all of which a device must meet; an absent one does not filter.
 * `online` carries the instant and fleet default interval the page's `online` fields are computed
 * with, so that the filter and the field agree on every row.
 */
export interface DeviceFilters {
  /** Only this organization's devices: for its members, all of them; for anyone else, none. */
  organizationId?: string;
  /** Case-insensitive substring of the name or the device id. */
  q?: string;
  /** The device has every one of these tags. */
  tags?: string[];
  online?: { value: boolean; now: Date; defaultIntervalSec: number };
  firmwareVersion?: string;
  /** The latest `soc` of at least one battery (as the viewer sees latest metrics) is below this. */
  socBelow?: number;
}

/**
 * The dashboard's device screens, read as response-shaped rows. Every method answers only devices
 * the viewer sees (their own and those shared with them; every device for an administrator); a device they cannot see is null
 * or absent, exactly like one that does not exist.
 */
export abstract class DashboardQueries {
  abstract device(viewer: Viewer, deviceId: string): Promise<DeviceSummaryRow | null>;

  /** The visibility check alone, for screens that show no summary (history, configuration). */
  abstract visibility(viewer: Viewer, deviceId: string): Promise<DeviceVisibilityRow | null>;

  /**
   * Who may change the device (name and tags), by the sharing module's rule: the owner, an
   * administrator or an installer; a viewer sees the device with `access: 'viewer'` and is refused
   * by DashboardService. Null like visibility.
   */
  abstract manageable(viewer: Viewer, deviceId: string): Promise<DeviceManagerRow | null>;

  /** Visible devices meeting `filters`, ordered by deviceId, those after `after` only, at most `limit`. */
  abstract devices(viewer: Viewer, filters: DeviceFilters, limit: number, after: string | undefined): Promise<DeviceSummaryRow[]>;
}
