import { Injectable } from '@nestjs/common';
import { SharingService } from '../../sharing/index.js';
import { Clock } from '../../../config/config.module.js';
import { NotFoundError, ValidationFailedError } from '../../../shared/domain-error.js';
import { OrganizationsService } from '../../organizations/index.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import { AccountsService } from '../../accounts/index.js';
import { AuditLog, type AuditContext } from '../../audit/index.js';
import { DeviceDecommissionedError, DeviceOwnershipService } from '../../devices/index.js';
import { EventLog } from '../../events/index.js';
import { TransferRecipientInvalidError } from '../domain/claim.errors.js';
import type { Ownership } from './claims.service.js';

/**
 * What administrators do to ownership: transfer a device to an account, decommission it (every
 * credential void, registration refused) and re-open it. Each change, its device events and its
 * audit entry commit together; repeating one changes nothing and records nothing.
 */
@Injectable()
export class AdminOwnershipService {
  constructor(
    private readonly devices: DeviceOwnershipService,
    private readonly accounts: AccountsService,
    private readonly events: EventLog,
    private readonly audit: AuditLog,
    private readonly sharing: SharingService,
    private readonly clock: Clock,
    private readonly organizations: OrganizationsService,
  ) {}

  /**
   * The account with `toEmail` owns the device from now on, as if it had claimed it: it sees the
   * device's history from this moment on (from the last release when nobody owned it), and the
   * previous owner loses it as by a release (device.released, then device.claimed).
   */
  async transfer(by: AuditContext, deviceId: string, to: { email?: string; organizationId?: string }): Promise<Ownership> {
    const ownerId = await this.recipientOf(to);
    const device = await this.devices.findDevice(deviceId);
    if (!device) throw new NotFoundError('No device has this id.');
    if (device.decommissionedAt) throw new DeviceDecommissionedError();
    const now = this.clock.now();
    const result = await this.devices.transferTo(deviceId, ownerId, now, async (tx, previousOwnerId) => {
      if (previousOwnerId) await this.events.record(tx, { type: 'device.released', deviceId, ownerId: previousOwnerId, occurredAt: now, data: {} });
      await this.events.record(tx, { type: 'device.claimed', deviceId, ownerId, occurredAt: now, data: { ownerId } });
      await this.audit.record(tx, { by, action: 'device.transferred', target: `device:${deviceId}`, deviceId, ownerId, detail: { ownerId, previousOwnerId }, at: now });
      // The previous owner's shares end with their ownership, as at a release.
      await this.sharing.endAllOf(tx, deviceId);
    });
    if (!result) throw new NotFoundError('No device has this id.');
    return { deviceId, ownerId, claimedAt: result.claimedAt };
  }

  /** The organization a transfer goes to: an account's personal one (by its verified address) or one named by id. */
  private async recipientOf(to: { email?: string; organizationId?: string }): Promise<string> {
    if (to.email !== undefined && to.organizationId !== undefined) throw new ValidationFailedError([{ field: 'toOrganizationId', message: 'give toEmail or toOrganizationId, not both' }]);
    if (to.organizationId !== undefined) {
      if (!(await this.organizations.exists(to.organizationId))) throw new TransferRecipientInvalidError('No organization has this id.', 'toOrganizationId');
      return to.organizationId;
    }
    const recipient = await this.accounts.accountByEmail(to.email ?? '');
    if (!recipient) throw new TransferRecipientInvalidError('No account has this e-mail address.');
    if (!recipient.emailVerified) throw new TransferRecipientInvalidError('The account with this e-mail address has not confirmed it yet.');
    return recipient.userId;
  }

  /** Releases the device and voids its credentials at once; it may not register until re-opened. */
  async decommission(by: AuditContext, deviceId: string): Promise<Date> {
    const now = this.clock.now();
    const result = await this.devices.decommission(deviceId, now, async (tx, previousOwnerId) => {
      await this.events.record(tx, { type: 'device.decommissioned', deviceId, ownerId: previousOwnerId, occurredAt: now, data: {} });
      // The entry is the previous owner's ownership's last: a later owner's window starts at this instant without it.
      await this.audit.record(tx, { by, action: 'device.decommissioned', target: `device:${deviceId}`, deviceId, ownerId: previousOwnerId, detail: { previousOwnerId }, at: now });
      await this.sharing.endAllOf(tx, deviceId);
    });
    if (!result) throw new NotFoundError('No device has this id.');
    return result.decommissionedAt;
  }

  /** Ends a decommission: the gateway may register again (same id and hardware) within the re-registration window. */
  async reopen(by: AuditContext, deviceId: string): Promise<Date | null> {
    const now = this.clock.now();
    const result = await this.devices.reopen(deviceId, now, (tx: SqlRunner) =>
      this.audit.record(tx, { by, action: 'device.reopened', target: `device:${deviceId}`, deviceId, ownerId: null, at: now }),
    );
    if (!result) throw new NotFoundError('No device has this id.');
    return result.openUntil;
  }
}
