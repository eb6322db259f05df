import { Injectable } from '@nestjs/common';
import { DevicePrincipal, type DeviceAuthenticator } from '../../../auth/principals.js';
import { InvalidRefreshTokenError } from '../../../shared/auth-tokens/refresh-tokens.js';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { SecretHasher } from '../../../shared/crypto/secret-hasher.js';
import { RateLimitedError, UnauthorizedError } from '../../../shared/domain-error.js';
import { FailureLimiter, limiterOf, type FailureBucket } from '../../../shared/rate-limit/failure-limiter.js';
import { ClaimCode } from '../domain/claim-code.js';
import { Device } from '../domain/device.js';
import { effectiveConfig, type DeviceConfig } from '../domain/device-config.js';
import {
  ClaimCodeAlreadySetError,
  ClaimCodeRequiredError,
  DeviceAlreadyRegisteredError,
  DeviceDecommissionedError,
  InvalidCredentialsError,
  RegistrationNotAllowedError,
} from '../domain/device.errors.js';
import { DeviceRepository } from '../domain/device.repository.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import type { AllowlistEntry } from '../domain/registration-allowlist.js';
import { RegistrationAllowlistStore } from '../domain/registration-allowlist.store.js';
import { DeviceSnapshots } from './device-snapshots.js';
import { DeviceTokens, type DeviceTokenClaims, type TokenPair } from './device-tokens.js';
import { FleetDefaultsStore } from './fleet-defaults.js';

export interface RegisterDeviceCommand {
  deviceId: string;
  hardwareId: string;
  firmwareVersion: string;
  claimCode?: string;
}

export interface Registration {
  device: Device;
  deviceSecret: string;
  tokens: TokenPair;
  config: DeviceConfig;
}

/**
 * A gateway's registration and credentials: registering (with the allowlist that may restrict it),
 * logging in with its secret, refreshing its tokens, the guard's check of an access token, and the
 * claim code a legacy gateway sets once.
 */
@Injectable()
export class DeviceRegistrationService implements DeviceAuthenticator {
  constructor(
    private readonly devices: DeviceRepository,
    private readonly allowlist: RegistrationAllowlistStore,
    private readonly tokens: DeviceTokens,
    private readonly hasher: SecretHasher,
    private readonly limiter: FailureLimiter,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly snapshots: DeviceSnapshots,
    private readonly defaults: FleetDefaultsStore,
  ) {}

  async register(command: RegisterDeviceCommand, clientAddress: string): Promise<Registration> {
    const firmware = FirmwareVersion.parse(command.firmwareVersion);
    const claimCode = command.claimCode === undefined ? null : ClaimCode.parse(command.claimCode);
    if (!claimCode && firmware.requiresClaimCode()) throw new ClaimCodeRequiredError();

    const deviceSecret = SecretHasher.randomToken();
    const secretHash = this.hasher.hmac(deviceSecret);
    const existing = await this.devices.findById(command.deviceId);
    if (existing?.decommissionedAt) throw new DeviceDecommissionedError();
    // Known ids skip the argon2 hash unless they re-register: a retry only verifies.
    if (!existing) {
      const created = await this.createWithinAddressLimit(clientAddress, async () => {
        if (this.env.REGISTRATION_MODE === 'allowlist' && !(await this.allowlist.allows(command))) throw new RegistrationNotAllowedError();
        const claimCodeHash = claimCode ? await this.hasher.hashLowEntropy(claimCode.value) : null;
        const now = this.clock.now();
        const fresh = Device.create({ deviceId: command.deviceId, hardwareId: command.hardwareId, firmwareVersion: firmware, claimCodeHash, secretHash, now });
        return (await this.devices.insertIfAbsent(fresh)) ? { fresh, now } : null;
      });
      if (created) {
        const { fresh, now } = created;
        return { device: fresh, deviceSecret, tokens: await this.tokens.issue(fresh, now), config: await this.configOf(fresh) };
      }
    }
    const device =
      (await this.reRegister(command, firmware, claimCode, secretHash)) ?? (await this.retryRegistration(command, claimCode, secretHash, clientAddress));
    const now = this.clock.now();
    await this.tokens.revokeAllOf(device.deviceId, now);
    return { device, deviceSecret, tokens: await this.tokens.issue(device, now), config: await this.configOf(device) };
  }

  /** A factory-reset gateway inside the window its owner opened: new secret and claim code, same ownership. */
  private async reRegister(command: RegisterDeviceCommand, firmware: FirmwareVersion, claimCode: ClaimCode | null, secretHash: string): Promise<Device | null> {
    const now = this.clock.now();
    const candidate = await this.devices.findById(command.deviceId);
    if (!candidate?.acceptsReRegistration(command.hardwareId, now)) return null;
    const claimCodeHash = claimCode ? await this.hasher.hashLowEntropy(claimCode.value) : null;
    let accepted = false;
    const device = await this.devices.updateLocked(command.deviceId, (current) => {
      accepted = current.acceptsReRegistration(command.hardwareId, now);
      if (accepted) current.reRegister({ secretHash, claimCodeHash, firmwareVersion: firmware, now });
      return accepted;
    });
    return device && accepted ? device : null;
  }

  /** The id is taken: either a lost-response retry of the same gateway (new credentials) or a 409. */
  private async retryRegistration(command: RegisterDeviceCommand, claimCode: ClaimCode | null, secretHash: string, clientAddress: string): Promise<Device> {
    return this.limiter.guard(this.credentialBuckets('register', command.deviceId, clientAddress), async () => {
      const existing = await this.devices.findById(command.deviceId);
      if (!existing) throw new DeviceAlreadyRegisteredError();
      // argon2 runs before taking the row lock; under the lock we only re-check what it saw.
      const claimCodeMatches =
        existing.claimCodeHash === null ? claimCode === null : claimCode !== null && (await this.hasher.verifyLowEntropy(claimCode.value, existing.claimCodeHash));
      let accepted = false;
      const now = this.clock.now();
      const device = await this.devices.updateLocked(command.deviceId, (current) => {
        accepted =
          current.claimCodeHash === existing.claimCodeHash &&
          current.acceptsRegistrationRetry({ hardwareId: command.hardwareId, claimCodeMatches, now, windowSec: this.env.REGISTRATION_RETRY_WINDOW_SEC });
        if (accepted) current.replaceCredentials(secretHash, now);
        return accepted;
      });
      if (!device || !accepted) throw new DeviceAlreadyRegisteredError();
      return device;
    });
  }

  /**
   * Limited per client address only. A device secret is a 256-bit random value: no number of
   * guesses finds it, so a per-device lockout would protect nothing and let anyone who knows a
   * deviceId lock that gateway out. A global limit would do the same to the whole fleet.
   */
  async login(deviceId: string, deviceSecret: string, clientAddress: string): Promise<TokenPair> {
    return this.limiter.guard([this.addressBucket('login', clientAddress)], async () => {
      const device = await this.devices.findById(deviceId);
      // Compare even when the device is unknown, so both failures take the same time.
      const secretMatches = this.hasher.hmacMatches(deviceSecret, device?.secretHash);
      if (!device || !secretMatches || device.decommissionedAt) throw new InvalidCredentialsError();
      const now = this.clock.now();
      if (!device.credentialsUsedAt) await this.devices.markCredentialsUsed(deviceId, now);
      return this.tokens.issue(device, now);
    });
  }

  /**
   * Rotates a refresh token. A token presented after it was rotated means two parties hold it:
   * every token of the device is voided (RFC 9700 reuse detection) and the gateway logs in again
   * with its secret. A repeat within REFRESH_REUSE_GRACE_SEC while the successor is unused (the
   * gateway lost the answer) gets the same pair again.
   */
  async refresh(refreshToken: string, clientAddress: string): Promise<TokenPair> {
    const buckets: FailureBucket[] = [
      { key: `refresh:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec: this.env.LOGIN_FAILURE_WINDOW_SEC },
    ];
    const now = this.clock.now();
    const rotated = await this.limiter.guard(buckets, () =>
      this.tokens.rotate(refreshToken, now, {
        currentTokenVersion: async (id) => (await this.devices.findById(id))?.tokenVersion ?? null,
        revokeAllTokens: async (id) => {
          await this.devices.updateLocked(id, (device) => {
            device.revokeTokens();
            return true;
          });
        },
      }),
    );
    const device = await this.getDevice(rotated.subjectId);
    // The same token presented elsewhere at once voided every token meanwhile: no successor.
    if (device.tokenVersion !== rotated.tokenVersion) throw new InvalidRefreshTokenError();
    if (!device.credentialsUsedAt) await this.devices.markCredentialsUsed(device.deviceId, now);
    return this.tokens.pairOf(rotated);
  }

  /** Checks a verified access token against the device's current credentials (guard): from memory while the device is unchanged (DeviceSnapshots). */
  async authenticate(claims: DeviceTokenClaims): Promise<DevicePrincipal> {
    const device = await this.snapshots.get(claims.sub);
    if (!device || device.tokenVersion !== claims.tv) throw new UnauthorizedError('The device token was revoked.');
    if (!device.credentialsUsed) await this.devices.markCredentialsUsed(device.deviceId, this.clock.now());
    return new DevicePrincipal(device.deviceId);
  }

  async getDevice(deviceId: string): Promise<Device> {
    const device = await this.devices.findById(deviceId);
    if (!device) throw new UnauthorizedError('The device no longer exists.');
    return device;
  }

  /** A legacy gateway that updated to firmware with a claim code sets it, once. */
  async setClaimCode(deviceId: string, rawClaimCode: string): Promise<void> {
    const claimCodeHash = await this.hasher.hashLowEntropy(ClaimCode.parse(rawClaimCode).value);
    let stored = false;
    await this.devices.updateLocked(deviceId, (device) => (stored = device.setClaimCode(claimCodeHash)));
    if (!stored) throw new ClaimCodeAlreadySetError();
  }

  async configOf(device: Device): Promise<DeviceConfig> {
    return effectiveConfig(await this.defaults.current(), device.config, device.registeredAt);
  }

  /** An administrator's import of the gateways that may register while REGISTRATION_MODE is allowlist. */
  importAllowlist(entries: AllowlistEntry[], importedBy: string): Promise<number> {
    return this.allowlist.importEntries(entries, importedBy, this.clock.now());
  }

  /** For low-entropy proofs (a claim code on a registration retry): per device id too, where guessing is the threat. */
  private credentialBuckets(purpose: string, deviceId: string, clientAddress: string): FailureBucket[] {
    return [
      { key: `${purpose}:device:${deviceId}`, limit: this.env.LOGIN_MAX_FAILURES_PER_DEVICE, windowSec: this.env.LOGIN_FAILURE_WINDOW_SEC },
      this.addressBucket(purpose, clientAddress),
    ];
  }

  private addressBucket(purpose: string, clientAddress: string): FailureBucket {
    return { key: `${purpose}:address:${clientAddress}`, limit: this.env.LOGIN_MAX_FAILURES_PER_ADDRESS, windowSec: this.env.LOGIN_FAILURE_WINDOW_SEC };
  }

  /**
   * Counts a new device against its client address before the allowlist and the argon2 hash run;
   * the count is taken back unless the device was created, so only new devices use up the budget.
   * A throttle, not a credential check: while the shared store does not answer, registration goes on.
   */
  private async createWithinAddressLimit<T>(clientAddress: string, create: () => Promise<T | null>): Promise<T | null> {
    const bucket: FailureBucket[] = [{ key: `register-new:address:${clientAddress}`, limit: this.env.REGISTRATION_MAX_PER_ADDRESS, windowSec: this.env.REGISTRATION_WINDOW_SEC }];
    const wait = await this.limiter.tryAcquire(bucket);
    if (wait !== null && wait > 0) throw new RateLimitedError(limiterOf(bucket), wait);
    let created: T | null = null;
    try {
      created = await create();
      return created;
    } finally {
      if (!created && wait !== null) await this.limiter.refund(bucket);
    }
  }
}
