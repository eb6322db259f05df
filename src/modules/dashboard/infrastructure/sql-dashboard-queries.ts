import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { DashboardQueries, type DeviceSummaryRow, type DeviceVisibilityRow, type Viewer } from '../domain/dashboard-queries.js';

/** Who sees a device: its owner, or any administrator. */
const VISIBLE = '($2::boolean OR d.owner_id = $3::uuid)';

const SUMMARY_COLUMNS = `
  d.device_id, d.hardware_id, d.firmware_version, d.owner_id, u.email AS owner_email, d.claimed_at, d.last_seen_at, d.visible_since,
  d.config_overrides, d.config_revision, d.applied_config_version, d.config_applied_at,
  (SELECT json_agg(json_build_object('batteryId', l.battery_id, 'metric', l.metric, 'ts', l.ts, 'value', l.value) ORDER BY l.battery_id, l.metric)
     FROM device_latest_metrics l
    WHERE l.device_id = d.device_id AND ($2::boolean OR d.visible_since IS NULL OR l.ts >= d.visible_since)) AS latest`;

/**
 * The dashboard's device screens: response-shaped rows straight from SQL written for each screen.
 * Hand-written SQL: the visibility read is part of the history hot path measured by S3
 * (bench/README.md), and the summaries aggregate latest metrics in PostgreSQL.
 */
@Injectable()
export class SqlDashboardQueries extends DashboardQueries {
  constructor(private readonly sql: Sql) {
    super();
  }

  async device(viewer: Viewer, deviceId: string): Promise<DeviceSummaryRow | null> {
    const rows = await this.sql.rows<DeviceSummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM devices d LEFT JOIN users u ON u.id = d.owner_id WHERE d.device_id = $1 AND ${VISIBLE}`,
      [deviceId, viewer.isAdmin, viewer.userId],
      'dashboard_device',
    );
    return rows[0] ?? null;
  }

  /** The visibility check alone, for screens that show no summary (history, configuration): one primary-key read. */
  async visibility(viewer: Viewer, deviceId: string): Promise<DeviceVisibilityRow | null> {
    const rows = await this.sql.rows<DeviceVisibilityRow>(
      `SELECT d.visible_since FROM devices d WHERE d.device_id = $1 AND ${VISIBLE}`,
      [deviceId, viewer.isAdmin, viewer.userId],
      'dashboard_visibility',
    );
    return rows[0] ?? null;
  }

  /** Keyset pagination on deviceId: stable while devices are added. */
  devices(viewer: Viewer, limit: number, after: string | undefined): Promise<DeviceSummaryRow[]> {
    return this.sql.rows<DeviceSummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM devices d LEFT JOIN users u ON u.id = d.owner_id
        WHERE ($1::text IS NULL OR d.device_id > $1) AND ${VISIBLE}
        ORDER BY d.device_id LIMIT $4`,
      [after ?? null, viewer.isAdmin, viewer.userId, limit],
    );
  }
}
