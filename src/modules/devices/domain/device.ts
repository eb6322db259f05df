import type { DeviceConfigState } from './device-config.js';
import type { DeviceSnapshot } from './device-snapshot.queries.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';

export interface DeviceState {
  deviceId: string;
  hardwareId: string;
  firmwareVersion: string;
  claimCodeHash: string | null;
  secretHash: string;
  tokenVersion: number;
  registeredAt: Date;
  credentialsIssuedAt: Date;
  credentialsUsedAt: Date | null;
  lastSeenAt: Date | null;
  ownerId: string | null;
  claimedAt: Date | null;
  /** Until then, a factory-reset gateway may register again with the same id and hardware. */
  reRegistrationUntil: Date | null;
  /** A later owner sees telemetry and OTA events from this moment on (null: since registration). */
  visibleSince: Date | null;
  /** Per-device configuration overrides; written only by DeviceConfigService. */
  config: DeviceConfigState;
  /** The configuration version the gateway said it applied, and when. */
  appliedConfigVersion: number | null;
  configAppliedAt: Date | null;
  /** Set by an administrator: credentials void, registration refused until re-opened. */
  decommissionedAt: Date | null;
}

export interface RegistrationRetry {
  hardwareId: string;
  /** Whether the retry's claim code matches the stored hash (both absent counts as a match). */
  claimCodeMatches: boolean;
  now: Date;
  windowSec: number;
}

/** A registered gateway and the credentials it holds. */
export class Device {
  private constructor(private state: DeviceState) {}

  static create(input: {
    deviceId: string;
    hardwareId: string;
    firmwareVersion: FirmwareVersion;
    claimCodeHash: string | null;
    secretHash: string;
    now: Date;
  }): Device {
    return new Device({
      deviceId: input.deviceId,
      hardwareId: input.hardwareId,
      firmwareVersion: input.firmwareVersion.value,
      claimCodeHash: input.claimCodeHash,
      secretHash: input.secretHash,
      tokenVersion: 1,
      registeredAt: input.now,
      credentialsIssuedAt: input.now,
      credentialsUsedAt: null,
      lastSeenAt: null,
      ownerId: null,
      claimedAt: null,
      reRegistrationUntil: null,
      visibleSince: null,
      config: { overrides: {}, revision: 0, updatedAt: null },
      appliedConfigVersion: null,
      configAppliedAt: null,
      decommissionedAt: null,
    });
  }

  static restore(state: DeviceState): Device {
    return new Device({ ...state });
  }

  get deviceId(): string {
    return this.state.deviceId;
  }
  get hardwareId(): string {
    return this.state.hardwareId;
  }
  get firmwareVersion(): FirmwareVersion {
    return FirmwareVersion.parse(this.state.firmwareVersion);
  }
  get claimCodeHash(): string | null {
    return this.state.claimCodeHash;
  }
  get secretHash(): string {
    return this.state.secretHash;
  }
  get tokenVersion(): number {
    return this.state.tokenVersion;
  }
  get registeredAt(): Date {
    return this.state.registeredAt;
  }
  get credentialsUsedAt(): Date | null {
    return this.state.credentialsUsedAt;
  }
  get ownerId(): string | null {
    return this.state.ownerId;
  }
  get claimedAt(): Date | null {
    return this.state.claimedAt;
  }
  get lastSeenAt(): Date | null {
    return this.state.lastSeenAt;
  }
  get visibleSince(): Date | null {
    return this.state.visibleSince;
  }
  get reRegistrationUntil(): Date | null {
    return this.state.reRegistrationUntil;
  }
  get config(): DeviceConfigState {
    return this.state.config;
  }
  get appliedConfigVersion(): number | null {
    return this.state.appliedConfigVersion;
  }
  get configAppliedAt(): Date | null {
    return this.state.configAppliedAt;
  }
  get decommissionedAt(): Date | null {
    return this.state.decommissionedAt;
  }
  get isClaimed(): boolean {
    return this.state.ownerId !== null;
  }
  /** A legacy device registered before claim codes existed and is claimed with its secret. */
  get isLegacy(): boolean {
    return this.state.claimCodeHash === null;
  }

  /**
   * A registration whose response was lost may be repeated: same hardware, same claim code, within
   * the retry window of the first registration, and only while nobody has used the credentials.
   * Anything else would let a stranger who learns a deviceId take the device over.
   */
  acceptsRegistrationRetry(retry: RegistrationRetry): boolean {
    const ageSec = (retry.now.getTime() - this.state.registeredAt.getTime()) / 1000;
    return (
      this.state.decommissionedAt === null &&
      retry.hardwareId === this.state.hardwareId &&
      retry.claimCodeMatches &&
      this.state.credentialsUsedAt === null &&
      ageSec >= 0 &&
      ageSec <= retry.windowSec
    );
  }

  /** New secret; every token issued before stops working. */
  replaceCredentials(secretHash: string, now: Date): void {
    this.state = { ...this.state, secretHash, tokenVersion: this.state.tokenVersion + 1, credentialsIssuedAt: now };
  }

  /** The owner (or an admin) lets a factory-reset gateway register once more. */
  openReRegistration(until: Date): void {
    this.state = { ...this.state, reRegistrationUntil: until };
  }

  acceptsReRegistration(hardwareId: string, now: Date): boolean {
    return this.state.decommissionedAt === null && this.state.reRegistrationUntil !== null && now <= this.state.reRegistrationUntil && hardwareId === this.state.hardwareId;
  }

  /**
   * A factory-reset gateway registered inside its window: new secret and claim code, every old
   * token void, ownership and history kept. The window closes.
   */
  reRegister(input: { secretHash: string; claimCodeHash: string | null; firmwareVersion: FirmwareVersion; now: Date }): void {
    this.state = {
      ...this.state,
      secretHash: input.secretHash,
      claimCodeHash: input.claimCodeHash,
      firmwareVersion: input.firmwareVersion.value,
      tokenVersion: this.state.tokenVersion + 1,
      credentialsIssuedAt: input.now,
      credentialsUsedAt: null,
      reRegistrationUntil: null,
    };
  }

  /** A legacy gateway updated to firmware that has a claim code sets it once. */
  setClaimCode(claimCodeHash: string): boolean {
    if (this.state.claimCodeHash !== null) return false;
    this.state = { ...this.state, claimCodeHash };
    return true;
  }

  /** Voids every access and refresh token issued so far; the secret stays valid for login. */
  revokeTokens(): void {
    this.state = { ...this.state, tokenVersion: this.state.tokenVersion + 1 };
  }

  toState(): DeviceState {
    return { ...this.state };
  }

  /** The part the device-facing hot paths cache (see DeviceSnapshot); the owner's tags are kept apart (device-labels.ts). */
  toSnapshot(tags: readonly string[] = []): DeviceSnapshot {
    const { deviceId, registeredAt, hardwareId, tokenVersion, credentialsUsedAt, config } = this.state;
    return { deviceId, registeredAt, hardwareId, firmwareVersion: this.firmwareVersion, tokenVersion, credentialsUsed: credentialsUsedAt !== null, config, tags };
  }
}
