import { DashboardQueries, type DeviceSummaryRow, type DeviceVisibilityRow, type Viewer } from '../domain/dashboard-queries.js';

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
      visible_since: null,
      config_overrides: {},
      config_revision: 1,
      applied_config_version: null,
      config_applied_at: null,
      latest: null,
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
    return row ? { visible_since: row.visible_since } : null;
  }

  async devices(viewer: Viewer, limit: number, after: string | undefined): Promise<DeviceSummaryRow[]> {
    return [...this.rows.values()]
      .filter((row) => sees(viewer, row) && (after === undefined || row.device_id > after))
      .sort((a, b) => (a.device_id < b.device_id ? -1 : 1))
      .slice(0, limit);
  }
}

const sees = (viewer: Viewer, row: DeviceSummaryRow) => viewer.isAdmin || row.owner_id === viewer.userId;
