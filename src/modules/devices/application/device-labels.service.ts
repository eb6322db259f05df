import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { parseLabelsPatch } from '../domain/device-labels.js';
import { DeviceRepository } from '../domain/device.repository.js';

/** A device's name and tags, as its owner, installer or an administrator sets them (audited). */
@Injectable()
export class DeviceLabelsService {
  constructor(
    private readonly devices: DeviceRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  /**
   * Sets the device's name and tags (parseLabelsPatch: a 400 changes nothing), provided it still
   * has the owner the caller's permission check saw: a device that changed hands since is a 404.
   */
  async relabel(deviceId: string, expectedOwnerId: string | null, body: unknown, by: AuditContext): Promise<void> {
    const patch = parseLabelsPatch(body);
    const relabeled = await this.devices.relabelIfOwnedBy(deviceId, expectedOwnerId, patch, (tx) =>
      this.audit.record(tx, { by, action: 'device.renamed', target: `device:${deviceId}`, deviceId, detail: { ...patch }, at: this.clock.now() }),
    );
    if (!relabeled) throw new NotFoundError('No visible device has this id.');
  }
}
