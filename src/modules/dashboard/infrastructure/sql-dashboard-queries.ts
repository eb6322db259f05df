import { Injectable } from '@nestjs/common';
import { ReplicaSql } from '../../../shared/database/replica-sql.js';
import { Sql } from '../../../shared/database/sql.js';
import { ACCOUNT_SUMMARIES } from '../../accounts/sql-api.js';
import { DEVICE_ONLINE, DEVICE_SUMMARIES } from '../../devices/sql-api.js';
import { DeviceAccess } from '../../sharing/index.js';
import { CUSTOMER_DEVICES, ORGANIZATION_DEVICES, VISIBLE_DEVICES } from '../../sharing/sql-api.js';
import { TELEMETRY_VIEWS } from '../../telemetry/index.js';
import { DashboardQueries, type DeviceFilters, type DeviceManagerRow, type DeviceSummaryRow, type DeviceVisibilityRow, type Viewer } from '../domain/dashboard-queries.js';

/**
 * Who sees a device is the one rule of the sharing module (VISIBLE_DEVICES): an administrator, its
 * owner, or the holder of an active share. The detail passes the viewer's kind as a parameter (one
 * statement text for every viewer: the named statements). The list decides it in JavaScript: under
 * the generic plans of the service's sessions (SESSION_OPTIONS) `$2 OR owner_id = $3` cannot use
 * the owner index, and a customer's list walked the whole fleet's primary key (5 ms on 20,000
 * devices of 2,000 owners, against 0.9 ms by the owner index); a customer's devices are read from
 * CUSTOMER_DEVICES (owner index, then the primary key for shared ones), an administrator's along
 * the primary key.
 */
const visibleTo = (viewer: Viewer) => (viewer.isAdmin ? `${VISIBLE_DEVICES}(true, $2::uuid)` : `${CUSTOMER_DEVICES}($2::uuid)`);

/** Columns of visible devices v with their summaries d and owners u; latest metrics (l) as the viewer sees them: a later owner none from before their claim. */
const SUMMARY_COLUMNS = `
  d.device_id, d.hardware_id, d.firmware_version, d.owner_id, u.email AS owner_email, d.claimed_at, d.last_seen_at, d.last_telemetry_at, d.visible_since,
  d.config_overrides, d.config_revision, d.applied_config_version, d.config_applied_at, d.name, d.tags,
  v.role AS access,
  (SELECT json_agg(json_build_object('batteryId', l.battery_id, 'metric', l.metric, 'ts', l.ts, 'value', l.value) ORDER BY l.battery_id, l.metric)
     FROM ${TELEMETRY_VIEWS.latest} l
    WHERE l.device_id = d.device_id AND l.ts >= v.sees_from) AS latest`;

const SUMMARIES_OF = (visible: string) => `${visible} v JOIN ${DEVICE_SUMMARIES} d ON d.device_id = v.device_id LEFT JOIN ${ACCOUNT_SUMMARIES} u ON u.user_id = d.owner_id`;

/** A LIKE pattern matching `text` anywhere: its own %, _ and \ match only themselves. */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;

/**
 * The dashboard's device screens: response-shaped rows straight from SQL written for each screen.
 * Hand-written SQL: the visibility read is part of the history hot path measured by S3
 * (bench/README.md), and the summaries aggregate latest metrics in PostgreSQL.
 */
@Injectable()
export class SqlDashboardQueries extends DashboardQueries {
  constructor(
    private readonly sql: Sql,
    private readonly replica: ReplicaSql,
    private readonly access: DeviceAccess,
  ) {
    super();
  }

  async device(viewer: Viewer, deviceId: string): Promise<DeviceSummaryRow | null> {
    const rows = await this.sql.rows<DeviceSummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM ${SUMMARIES_OF(`${VISIBLE_DEVICES}($2::boolean, $3::uuid)`)} WHERE v.device_id = $1`,
      [deviceId, viewer.isAdmin, viewer.userId],
      'dashboard_device',
    );
    return rows[0] ?? null;
  }

  /** The visibility check alone, for screens that show no summary (history, configuration): one primary-key read, by the one rule. */
  async visibility(viewer: Viewer, deviceId: string): Promise<DeviceVisibilityRow | null> {
    const grant = await this.access.grantOf(viewer, deviceId);
    return grant && { visible_since: grant.visibleSince, access: grant.role };
  }

  async manageable(viewer: Viewer, deviceId: string): Promise<DeviceManagerRow | null> {
    const grant = await this.access.grantOf(viewer, deviceId);
    return grant && { owner_id: grant.ownerId, access: grant.role };
  }

  /**
   * Keyset pagination on deviceId: stable while devices are added, and with filters, since a
   * filter only removes rows from the same order. The statement holds only the conditions asked
   * for (no `$n IS NULL OR …`, which a generic plan evaluates on every row): an administrator's
   * page is read along the primary key and filtered until it is full, a customer's from their
   * devices by the owner index. A list may be a few seconds old: it is read on a replica when one
   * is close enough (a device's own page, device(), reads the primary).
   */
  devices(viewer: Viewer, filters: DeviceFilters, limit: number, after: string | undefined): Promise<DeviceSummaryRow[]> {
    // Every device id has at least one character: after '' is the first page.
    const values: unknown[] = [after ?? '', viewer.userId, limit];
    const param = (value: unknown, type: string) => {
      values.push(value);
      return `$${values.length}::${type}`;
    };
    const conditions = ['v.device_id > $1::text'];
    // One organization's devices: for a customer its member rows in device id order from the owner
    // index (ORGANIZATION_DEVICES); an administrator's list narrowed to its owner.
    let visible = visibleTo(viewer);
    if (filters.organizationId !== undefined) {
      const organization = param(filters.organizationId, 'uuid');
      if (viewer.isAdmin) conditions.push(`v.owner_id = ${organization}`);
      else visible = `${ORGANIZATION_DEVICES}($2::uuid, ${organization})`;
    }
    if (filters.q !== undefined) {
      const pattern = param(containing(filters.q), 'text');
      conditions.push(`(d.name ILIKE ${pattern} OR d.device_id ILIKE ${pattern})`);
    }
    if (filters.tags !== undefined) conditions.push(`d.tags @> ${param(filters.tags, 'text[]')}`);
    if (filters.firmwareVersion !== undefined) conditions.push(`d.firmware_version = ${param(filters.firmwareVersion, 'text')}`);
    if (filters.online !== undefined) {
      // DashboardService.isOnline in SQL, at the same instant with the same fleet default.
      const { now, defaultIntervalSec } = filters.online;
      const online = `${DEVICE_ONLINE}(d.last_telemetry_at, COALESCE((d.config_overrides->>'telemetryIntervalSec')::int, ${param(defaultIntervalSec, 'int')}), ${param(now, 'timestamptz')})`;
      conditions.push(filters.online.value ? online : `NOT ${online}`);
    }
    if (filters.socBelow !== undefined) {
      conditions.push(
        `EXISTS (SELECT 1 FROM ${TELEMETRY_VIEWS.latest} l WHERE l.device_id = d.device_id AND l.metric = 'soc' AND l.value < ${param(filters.socBelow, 'float8')} AND l.ts >= v.sees_from)`,
      );
    }
    return this.replica.rows<DeviceSummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM ${SUMMARIES_OF(visible)}
        WHERE ${conditions.join(' AND ')}
        ORDER BY v.device_id LIMIT $3`,
      values,
    );
  }
}
