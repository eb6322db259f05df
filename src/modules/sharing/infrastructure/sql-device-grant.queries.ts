import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { DeviceGrantQueries } from '../domain/device-grant.queries.js';
import type { DeviceGrant, DeviceRole, DeviceViewer } from '../domain/device-share.js';
import { VISIBLE_DEVICES } from '../sql-api.js';

/** One primary-key read (each arm of the rule, the viewer's kind a parameter, narrowed to the device by it). */
@Injectable()
export class SqlDeviceGrantQueries extends DeviceGrantQueries {
  constructor(private readonly sql: Sql) {
    super();
  }

  async grantOf(viewer: DeviceViewer, deviceId: string): Promise<DeviceGrant | null> {
    const [row] = await this.sql.rows<{ role: DeviceRole; owner_id: string | null; visible_since: Date | null }>(
      `SELECT v.role, v.owner_id, v.visible_since FROM ${VISIBLE_DEVICES}($2::boolean, $3::uuid) v WHERE v.device_id = $1`,
      [deviceId, viewer.isAdmin, viewer.userId],
      'device_access',
    );
    return row ? { role: row.role, ownerId: row.owner_id, visibleSince: row.visible_since } : null;
  }
}
