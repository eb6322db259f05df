import { Injectable } from '@nestjs/common';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { Device } from '../domain/device.js';
import { DeviceRepository, type AdminChange, type AdminChanged, type OwnedDevicesPage, type OwnershipChanged } from '../domain/device.repository.js';
import { DeviceTokens } from './device-tokens.js';

/**
 * Who owns a device, for the claims module (claims, releases, an account's deletion, and an
 * administrator's transfer, decommission and re-opening): the devices table is this module's, so
 * claims changes ownership through here. Each change takes a callback that runs in its transaction.
 */
@Injectable()
export class DeviceOwnershipService {
  constructor(
    private readonly devices: DeviceRepository,
    private readonly tokens: DeviceTokens,
    private readonly hasher: SecretHasher,
    private readonly env: Env,
  ) {}

  /** The device as stored (its owner, its state); null when there is none. */
  findDevice(deviceId: string): Promise<Device | null> {
    return this.devices.findById(deviceId);
  }

  secretMatches(device: Device, deviceSecret: string): boolean {
    return this.hasher.hmacMatches(deviceSecret, device.secretHash);
  }

  /** `onClaimed` runs in the claim's transaction when the device changed hands. */
  claimFor(deviceId: string, ownerId: string, now: Date, onClaimed?: OwnershipChanged): Promise<{ ownerId: string; claimedAt: Date } | null> {
    return this.devices.claimIfUnowned(deviceId, ownerId, now, onClaimed);
  }

  /** `onReleased` runs in the release's transaction: its own, or `within` when given. */
  releaseFrom(deviceId: string, ownerId: string, now: Date, onReleased?: OwnershipChanged, within?: SqlRunner): Promise<boolean> {
    return this.devices.releaseIfOwnedBy(deviceId, ownerId, now, onReleased, within);
  }

  /** Within `tx`: the ids of the devices `ownerId` holds, locked until `tx` ends (an account being deleted). */
  lockOwnedBy(ownerId: string, tx: SqlRunner): Promise<string[]> {
    return this.devices.lockOwnedBy(ownerId, tx);
  }

  listOwnedBy(ownerId: string, page: OwnedDevicesPage): Promise<Device[]> {
    return this.devices.listOwnedBy(ownerId, page);
  }

  /** `onOpened` runs in the transaction that opens the window. */
  async openReRegistration(deviceId: string, now: Date, onOpened?: OwnershipChanged): Promise<Date> {
    const until = this.reRegistrationWindowFrom(now);
    await this.devices.updateLocked(
      deviceId,
      (device) => {
        device.openReRegistration(until);
        return true;
      },
      onOpened,
    );
    return until;
  }

  // An administrator's ownership changes.

  /** Null when the device does not exist; `onTransferred` runs in the transaction when it changed hands. */
  transferTo(deviceId: string, ownerId: string, now: Date, onTransferred?: AdminChanged): Promise<(AdminChange & { claimedAt: Date }) | null> {
    return this.devices.transferTo(deviceId, ownerId, now, onTransferred);
  }

  /** Null when the device does not exist; a second call changes nothing. Every credential is void at once. */
  async decommission(deviceId: string, now: Date, onDecommissioned?: AdminChanged): Promise<(AdminChange & { decommissionedAt: Date }) | null> {
    // A fresh secret nobody is told: logins fail as for a wrong one.
    const result = await this.devices.decommission(deviceId, now, this.hasher.hmac(SecretHasher.randomToken()), onDecommissioned);
    if (result?.changed) await this.tokens.revokeAllOf(deviceId, now);
    return result;
  }

  /** Null when the device does not exist; else the re-registration window (null: it was not decommissioned). */
  reopen(deviceId: string, now: Date, onReopened?: OwnershipChanged): Promise<{ changed: boolean; openUntil: Date | null } | null> {
    return this.devices.reopen(deviceId, this.reRegistrationWindowFrom(now), onReopened);
  }

  private reRegistrationWindowFrom(now: Date): Date {
    return new Date(now.getTime() + this.env.RE_REGISTRATION_WINDOW_SEC * 1000);
  }
}
