import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../../shared/domain-error.js';
import { DeviceGrantQueries } from '../domain/device-grant.queries.js';
import { type DeviceGrant, type DeviceViewer, mayManage } from '../domain/device-share.js';
import { ShareRoleError } from '../domain/sharing.errors.js';

/**
 * "What is this viewer to this device?", answered by the one visibility rule (VISIBLE_DEVICES) in
 * one primary-key read: every per-device check (history, OTA history, configuration, alert rules,
 * names and tags) asks here. Lists and logs use the same rule in SQL.
 */
@Injectable()
export class DeviceAccess {
  constructor(private readonly grants: DeviceGrantQueries) {}

  /** The viewer's grant on the device, or null when they cannot see it (or it does not exist). */
  grantOf(viewer: DeviceViewer, deviceId: string): Promise<DeviceGrant | null> {
    return this.grants.grantOf(viewer, deviceId);
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
