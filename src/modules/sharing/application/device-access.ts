import { Injectable } from '@nestjs/common';
import { Sql } from '../../../shared/database/sql.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { type DeviceGrant, type DeviceRole, type DeviceViewer, mayManage } from '../domain/device-share.js';
import { ShareRoleError } from '../domain/sharing.errors.js';
import { roleOn } from '../infrastructure/visibility-sql.js';

/**
 * "What is this viewer to this device?", answered by the one visibility rule (visibility-sql.ts) in
 * one primary-key read: every per-device check (history, OTA history, configuration, alert rules,
 * names and tags) asks here. Lists and logs use the same rule as SQL.
 */
@Injectable()
export class DeviceAccess {
  constructor(private readonly sql: Sql) {}

  /** The viewer's grant on the device, or null when they cannot see it (or it does not exist). */
  async grantOf(viewer: DeviceViewer, deviceId: string): Promise<DeviceGrant | null> {
    const [row] = await this.sql.rows<{ role: DeviceRole | null; owner_id: string | null; visible_since: Date | null }>(
      `SELECT ${roleOn('d', '$2::boolean', '$3::uuid')} AS role, d.owner_id, d.visible_since FROM devices d WHERE d.device_id = $1`,
      [deviceId, viewer.isAdmin, viewer.userId],
      'device_access',
    );
    return row?.role ? { role: row.role, ownerId: row.owner_id, visibleSince: row.visible_since } : null;
  }

  /** The grant of a viewer who sees the device; anyone else gets the 404 of a device that does not exist. */
  async toSee(viewer: DeviceViewer, deviceId: string): Promise<DeviceGrant> {
    const grant = await this.grantOf(viewer, deviceId);
    if (!grant) throw new NotFoundError('No visible device has this id.');
    return grant;
  }

  /** As toSee, and a viewer (who sees it but may not change it) gets 403 SHARE_ROLE. */
  async toManage(viewer: DeviceViewer, deviceId: string): Promise<DeviceGrant> {
    const grant = await this.toSee(viewer, deviceId);
    if (!mayManage(grant.role)) throw new ShareRoleError();
    return grant;
  }
}
