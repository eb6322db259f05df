import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { FailureLimiter, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { ErasedAccount } from '../../accounts/index.js';
import { ClaimCode, type Device, DeviceOwnershipService } from '../../devices/index.js';
import { EventLog } from '../../events/index.js';
import { actorOf, AuditLog, type AuditContext } from '../../audit/index.js';
import { SharingService } from '../../sharing/index.js';
import { OrganizationsService } from '../../organizations/index.js';
import { ClaimAuditStore, type ClaimAuditEntry, type ClaimOutcome } from '../domain/claim-audit.store.js';
import { ClaimCodeMissingError, DeviceAlreadyClaimedError, DeviceSecretRequiredError, EmailNotVerifiedError, InvalidClaimError } from '../domain/claim.errors.js';

export interface ClaimCommand {
  deviceId: string;
  claimCode?: string;
  deviceSecret?: string;
  /** The organization to claim into; the caller's personal one when left out. */
  organizationId?: string;
}

export interface Ownership {
  deviceId: string;
  ownerId: string;
  claimedAt: Date;
}

const CLAIM_OUTCOMES = new Set<string>([
  'RATE_LIMITED',
  'INVALID_CLAIM',
  'DEVICE_ALREADY_CLAIMED',
  'EMAIL_NOT_VERIFIED',
  'CLAIM_CODE_REQUIRED',
  'DEVICE_SECRET_REQUIRED',
  'NOT_FOUND',
]);

@Injectable()
export class ClaimsService {
  private readonly logger = new Logger(ClaimsService.name);

  constructor(
    private readonly devices: DeviceOwnershipService,
    private readonly audit: ClaimAuditStore,
    private readonly events: EventLog,
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly auditLog: AuditLog,
    private readonly sharing: SharingService,
    private readonly organizations: OrganizationsService,
  ) {}

  /**
   * The claim rules in the order the claim endpoint's documented status table implies: verified e-mail, known device,
   * not owned by someone else, then the proof (claim code, or device secret for legacy devices).
   * The ownership change itself is one conditional UPDATE, so two racing claimers cannot both win.
   */
  async claim(customer: CustomerPrincipal, command: ClaimCommand, clientAddress: string): Promise<Ownership> {
    const attempt = { userId: customer.userId, deviceId: command.deviceId, action: 'claim' as const, clientAddress };
    return this.audited(attempt, async (note) => {
      if (this.env.EMAIL_VERIFICATION_REQUIRED && !customer.emailVerified) throw new EmailNotVerifiedError();
      // "This customer" of the claim rules is the organization the device is claimed into.
      const ownerId = await this.organizations.claimingOwner(customer.userId, command.organizationId);
      // Only wrong proofs (of either kind) count against the limits; they are counted before the (slow) check.
      return this.limiter.guard(
        this.claimBuckets(command.deviceId, customer.userId),
        async () => {
          const device = await this.devices.findDevice(command.deviceId);
          // A decommissioned device answers like an unknown one until an administrator re-opens it.
          if (!device || device.decommissionedAt) {
            // Hash anyway, so an unknown id answers as slowly as a wrong code.
            await this.hasher.verifyLowEntropy(command.claimCode ?? command.deviceSecret ?? '', null);
            throw new InvalidClaimError();
          }
          if (device.ownerId !== null && device.ownerId !== ownerId) throw new DeviceAlreadyClaimedError();
          if (!(await this.proofMatches(device, command))) throw new InvalidClaimError();
          if (device.ownerId === ownerId) note('ALREADY_OWNED');
          const now = this.clock.now();
          const ownership = await this.devices.claimFor(device.deviceId, ownerId, now, async (tx) => {
            await this.events.record(tx, { type: 'device.claimed', deviceId: device.deviceId, ownerId, occurredAt: now, data: { ownerId } });
            await this.auditLog.record(tx, { by: this.by(customer, clientAddress), action: 'device.claimed', target: `device:${device.deviceId}`, deviceId: device.deviceId, ownerId, at: now });
          });
          if (!ownership) throw new DeviceAlreadyClaimedError();
          return { deviceId: device.deviceId, ...ownership };
        },
        // The wrong kind of proof keeps the documented 400 but counts like a wrong one, so it is no way
        // around the limits (and no free probe of which ids are registered).
        (error) => error instanceof InvalidClaimError || error instanceof ClaimCodeMissingError || error instanceof DeviceSecretRequiredError,
      );
    });
  }

  async release(customer: CustomerPrincipal, deviceId: string, clientAddress: string): Promise<void> {
    const attempt = { userId: customer.userId, deviceId, action: 'release' as const, clientAddress };
    await this.audited(attempt, async () => {
      const ownerId = await this.ownerActedFor(customer, deviceId);
      const now = this.clock.now();
      const released = ownerId !== null && (await this.devices.releaseFrom(deviceId, ownerId, now, (tx) => this.recordRelease(tx, deviceId, ownerId, now, this.by(customer, clientAddress))));
      if (!released) throw new NotFoundError('You own no device with this id.');
    });
  }

  /**
   * The account's erasure step: inside the deletion's transaction, releases each of its devices as
   * `release` does (the same statement, device.released event and audit row), so each is claimable
   * again and keeps its telemetry; nothing is released if the deletion rolls back.
   */
  async releaseAllOf(account: ErasedAccount, tx: SqlRunner): Promise<void> {
    for (const deviceId of await this.devices.lockOwnedBy(account.userId, tx)) {
      const by: AuditContext = { actor: { kind: 'user', userId: account.userId, apiKeyId: null }, clientAddress: account.clientAddress };
      await this.devices.releaseFrom(deviceId, account.userId, account.at, (within) => this.recordRelease(within, deviceId, account.userId, account.at, by), tx);
      await this.audit.record({ userId: account.userId, deviceId, action: 'release', outcome: 'RELEASED', clientAddress: account.clientAddress, at: account.at }, tx);
    }
  }

  private async recordRelease(tx: SqlRunner, deviceId: string, ownerId: string, now: Date, by: AuditContext): Promise<void> {
    // No owner id in the data: the next owner sees this event, and whose the device was is not theirs to know.
    await this.events.record(tx, { type: 'device.released', deviceId, ownerId, occurredAt: now, data: {} });
    // The entry is the releasing owner's: the next owner's window starts at this instant and must not show it.
    await this.auditLog.record(tx, { by, action: 'device.released', target: `device:${deviceId}`, deviceId, ownerId, at: now });
    // Shares end with the ownership (they would stop counting anyway: granted_by is no longer the owner).
    await this.sharing.endAllOf(tx, deviceId);
  }

  /** The customer's devices, most recently claimed first: a page of `limit` after `cursor` (a nextCursor this returned). */
  async listDevices(customer: CustomerPrincipal, limit: number, cursor?: string): Promise<{ items: Device[]; nextCursor: string | null }> {
    const after = cursor === undefined ? undefined : decodeTimeCursor(cursor, (key) => DEVICE_ID_PATTERN.test(key));
    const rows = await this.devices.listOwnedBy(customer.userId, { limit: limit + 1, after: after && { claimedAt: after.ts, deviceId: after.key } });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit ? encodeTimeCursor(last.claimedAt ?? last.registeredAt, last.deviceId) : null };
  }

  /** Lets a factory-reset gateway register again with the same id and hardware (owner or admin). */
  async openReRegistration(customer: CustomerPrincipal, deviceId: string, clientAddress: string): Promise<Date> {
    const attempt = { userId: customer.userId, deviceId, action: 're-registration' as const, clientAddress };
    return this.audited(attempt, async () => {
      const device = await this.devices.findDevice(deviceId);
      const mayOpen = device !== null && (customer.isAdmin || (device.ownerId !== null && (await this.organizations.actsAsOwner(customer.userId, device.ownerId))));
      if (!mayOpen) throw new NotFoundError('You own no device with this id.');
      const now = this.clock.now();
      return this.devices.openReRegistration(deviceId, now, (tx) =>
        this.auditLog.record(tx, { by: this.by(customer, clientAddress), action: 'device.re_registration_opened', target: `device:${deviceId}`, deviceId, at: now }),
      );
    });
  }

  /**
   * The owner the customer acts for on the device: its owner organization when it is theirs
   * (personal) or one they are an owner or admin of; null when neither (or no such device).
   */
  private async ownerActedFor(customer: CustomerPrincipal, deviceId: string): Promise<string | null> {
    const device = await this.devices.findDevice(deviceId);
    if (!device?.ownerId) return null;
    return (await this.organizations.actsAsOwner(customer.userId, device.ownerId)) ? device.ownerId : null;
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

  /** Runs one attempt and records its outcome, success or failure, in the audit table. */
  private async audited<T>(attempt: Omit<ClaimAuditEntry, 'outcome' | 'at'>, work: (note: (outcome: ClaimOutcome) => void) => Promise<T>): Promise<T> {
    let outcome: ClaimOutcome = attempt.action === 'claim' ? 'CLAIMED' : attempt.action === 'release' ? 'RELEASED' : 'RE_REGISTRATION_OPENED';
    try {
      return await work((noted) => (outcome = noted));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      outcome = typeof code === 'string' && CLAIM_OUTCOMES.has(code) ? (code as ClaimOutcome) : 'ERROR';
      throw error;
    } finally {
      // The audit must not change the answer: a failed write is logged, the outcome stands.
      await this.audit.record({ ...attempt, outcome, at: this.clock.now() }).catch((error: unknown) => {
        this.logger.error({ code: (error as { code?: unknown }).code, deviceId: attempt.deviceId, outcome }, 'Claim audit write failed');
      });
    }
  }

  private by(customer: CustomerPrincipal, clientAddress: string): AuditContext {
    return { actor: actorOf(customer), clientAddress };
  }

  private claimBuckets(deviceId: string, userId: string): FailureBucket[] {
    const windowSec = this.env.CLAIM_FAILURE_WINDOW_SEC;
    return [
      { key: `claim:device:${deviceId}`, limit: this.env.CLAIM_MAX_FAILURES_PER_DEVICE, windowSec },
      { key: `claim:customer:${userId}`, limit: this.env.CLAIM_MAX_FAILURES_PER_CUSTOMER, windowSec },
    ];
  }
}
