import { isDeviceOnline } from '../../../src/modules/devices/index.js';
import { DashboardQueries, type DeviceFilters, type DeviceManagerRow, type DeviceSummaryRow, type DeviceVisibilityRow, type Viewer } from '../../../src/modules/dashboard/domain/dashboard-queries.js';

/** The dashboard's device reads in memory, with the SQL's visibility rule: the owner, or any administrator. */
export class InMemoryDashboardQueries extends DashboardQueries {
  private readonly rows = new Map<string, DeviceSummaryRow>();

  /** Stores a device summary; fields not given are those of a registered, unclaimed device never seen. */
  add(row: Partial<DeviceSummaryRow> & { device_id: string }): DeviceSummaryRow {
    const stored: DeviceSummaryRow = {
      hardware_id: 'esp32s3-7c:df:a1:0b:22:c4',
      firmware_version: '0.1.4',
      owner_id: null,
      owner_email: null,
      claimed_at: null,
      last_seen_at: null,
      last_telemetry_at: null,
      visible_since: null,
      config_overrides: {},
      config_revision: 1,
      applied_config_version: null,
      config_applied_at: null,
      latest: null,
      name: null,
      tags: [],
      access: 'owner',
      ...row,
    };
    this.rows.set(row.device_id, stored);
    return stored;
  }

  async device(viewer: Viewer, deviceId: string): Promise<DeviceSummaryRow | null> {
    const row = this.rows.get(deviceId);
    return row && sees(viewer, row) ? row : null;
  }

  async visibility(viewer: Viewer, deviceId: string): Promise<DeviceVisibilityRow | null> {
    const row = await this.device(viewer, deviceId);
    return row ? { visible_since: row.visible_since, access: row.access } : null;
  }

  async manageable(viewer: Viewer, deviceId: string): Promise<DeviceManagerRow | null> {
    const row = await this.device(viewer, deviceId);
    return row ? { owner_id: row.owner_id, access: row.access } : null;
  }

  async devices(viewer: Viewer, filters: DeviceFilters, limit: number, after: string | undefined): Promise<DeviceSummaryRow[]> {
    return [...this.rows.values()]
      .filter((row) => sees(viewer, row) && (after === undefined || row.device_id > after) && meets(viewer, row, filters))
      .sort((a, b) => (a.device_id < b.device_id ? -1 : 1))
      .slice(0, limit);
  }
}

const sees = (viewer: Viewer, row: DeviceSummaryRow) => viewer.isAdmin || row.owner_id === viewer.userId;

/** The SQL's filters, in memory. */
function meets(viewer: Viewer, row: DeviceSummaryRow, filters: DeviceFilters): boolean {
  const q = filters.q?.toLowerCase();
  if (q !== undefined && !row.device_id.toLowerCase().includes(q) && !row.name?.toLowerCase().includes(q)) return false;
  if (filters.tags && !filters.tags.every((tag) => row.tags.includes(tag))) return false;
  if (filters.firmwareVersion !== undefined && row.firmware_version !== filters.firmwareVersion) return false;
  if (filters.online) {
    const online = isDeviceOnline(row.last_telemetry_at, row.config_overrides.telemetryIntervalSec ?? filters.online.defaultIntervalSec, filters.online.now);
    if (online !== filters.online.value) return false;
  }
  if (filters.socBelow !== undefined) {
    const since = viewer.isAdmin ? null : row.visible_since;
    const below = (row.latest ?? []).some((latest) => latest.metric === 'soc' && latest.value < filters.socBelow! && (since === null || new Date(latest.ts) >= since));
    if (!below) return false;
  }
  return true;
}
