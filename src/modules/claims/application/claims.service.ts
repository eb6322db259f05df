import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import type { CustomerPrincipal } from '../../accounts/application/accounts.service.js';
import { DevicesService } from '../../devices/application/devices.service.js';
import { ClaimCode } from '../../devices/domain/claim-code.js';
import type { Device } from '../../devices/domain/device.js';
import { ClaimAudit, type ClaimAuditEntry, type ClaimOutcome } from '../domain/claim-audit.js';
import { ClaimCodeMissingError, DeviceAlreadyClaimedError, DeviceSecretRequiredError, EmailNotVerifiedError, InvalidClaimError } from '../domain/claim.errors.js';

export interface ClaimCommand {
  deviceId: string;
  claimCode?: string;
  deviceSecret?: string;
}

export interface Ownership {
  deviceId: string;
  ownerId: string;
  claimedAt: Date;
}

@Injectable()
export class ClaimsService {
  constructor(
    private readonly devices: DevicesService,
    private readonly audit: ClaimAudit,
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly clock: Clock,
    private readonly env: Env,
  ) {}

  /**
   * The claim rules in the order the seed's status table implies: verified e-mail, known device,
   * not owned by someone else, then the proof (claim code, or device secret for legacy devices).
   * The ownership change itself is one conditional UPDATE, so two racing claimers cannot both win.
   */
  async claim(customer: CustomerPrincipal, command: ClaimCommand, clientAddress: string): Promise<Ownership> {
    const attempt = { userId: customer.userId, deviceId: command.deviceId, action: 'claim' as const, clientAddress };
    return this.audited(attempt, async () => {
      if (this.env.EMAIL_VERIFICATION_REQUIRED && !customer.emailVerified) throw new EmailNotVerifiedError();
      const buckets = this.claimBuckets(command.deviceId, customer.userId);
      await this.limiter.refuseWhileLimited(buckets);

      const device = await this.devices.findDevice(command.deviceId);
      if (!device) return this.failProof(buckets);
      if (device.ownerId !== null && device.ownerId !== customer.userId) throw new DeviceAlreadyClaimedError();
      if (!(await this.proofMatches(device, command))) return this.failProof(buckets);

      const ownership = await this.devices.claimFor(device.deviceId, customer.userId, this.clock.now());
      if (!ownership) throw new DeviceAlreadyClaimedError();
      return { deviceId: device.deviceId, ...ownership };
    });
  }

  async release(customer: CustomerPrincipal, deviceId: string, clientAddress: string): Promise<void> {
    const attempt = { userId: customer.userId, deviceId, action: 'release' as const, clientAddress };
    await this.audited(attempt, async () => {
      if (!(await this.devices.releaseFrom(deviceId, customer.userId, this.clock.now()))) throw new NotFoundError('You own no device with this id.');
    });
  }

  listDevices(customer: CustomerPrincipal): Promise<Device[]> {
    return this.devices.listOwnedBy(customer.userId);
  }

  /** Lets a factory-reset gateway register again with the same id and hardware (owner or admin). */
  async openReRegistration(customer: CustomerPrincipal, deviceId: string, clientAddress: string): Promise<Date> {
    const attempt = { userId: customer.userId, deviceId, action: 're-registration' as const, clientAddress };
    return this.audited(attempt, async () => {
      const device = await this.devices.findDevice(deviceId);
      if (!device || (!customer.isAdmin && device.ownerId !== customer.userId)) throw new NotFoundError('You own no device with this id.');
      return this.devices.openReRegistration(deviceId, this.clock.now());
    });
  }

  private async proofMatches(device: Device, command: ClaimCommand): Promise<boolean> {
    if (!device.isLegacy) {
      if (command.claimCode === undefined) throw new ClaimCodeMissingError();
      // A secret is never accepted for a device that has a claim code.
      return ClaimCode.isWellFormed(command.claimCode) && this.hasher.verifyLowEntropy(ClaimCode.parse(command.claimCode).value, device.claimCodeHash);
    }
    if (command.deviceSecret === undefined) throw new DeviceSecretRequiredError();
    return this.devices.secretMatches(device, command.deviceSecret);
  }

  private async failProof(buckets: FailureBucket[]): Promise<never> {
    await this.limiter.recordFailure(buckets);
    throw new InvalidClaimError();
  }

  /** Runs one attempt and records its outcome, success or failure, in the audit table. */
  private async audited<T>(attempt: Omit<ClaimAuditEntry, 'outcome' | 'at'>, work: () => Promise<T>): Promise<T> {
    let outcome: ClaimOutcome = attempt.action === 'claim' ? 'CLAIMED' : attempt.action === 'release' ? 'RELEASED' : 'RE_REGISTRATION_OPENED';
    try {
      return await work();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      outcome = (typeof code === 'string' ? code : 'ERROR') as ClaimOutcome;
      throw error;
    } finally {
      await this.audit.record({ ...attempt, outcome, at: this.clock.now() });
    }
  }

  private claimBuckets(deviceId: string, userId: string): FailureBucket[] {
    const windowSec = this.env.CLAIM_FAILURE_WINDOW_SEC;
    return [
      { key: `claim:device:${deviceId}`, limit: this.env.CLAIM_MAX_FAILURES_PER_DEVICE, windowSec },
      { key: `claim:customer:${userId}`, limit: this.env.CLAIM_MAX_FAILURES_PER_CUSTOMER, windowSec },
    ];
  }
}
