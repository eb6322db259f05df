import type { Device } from './device.js';

export interface StoredRefreshToken {
  id: string;
  deviceId: string;
  /** The device's token version when issued: a later version voids the token. */
  tokenVersion: number;
  expiresAt: Date;
  rotatedAt: Date | null;
  revokedAt: Date | null;
}

/** Port for device persistence. The abstract class doubles as the injection token. */
export abstract class DeviceRepository {
  abstract findById(deviceId: string): Promise<Device | null>;
  /** Inserts the device unless the id is taken; returns false when it was. */
  abstract insertIfAbsent(device: Device): Promise<boolean>;
  /**
   * Runs `change` on the device's row locked against concurrent changes, and stores the result
   * when `change` returns true. Returns the device as seen under the lock (null if absent).
   */
  abstract updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean): Promise<Device | null>;
  /** Records the first use of the current credentials (idempotent). */
  abstract markCredentialsUsed(deviceId: string, now: Date): Promise<void>;

  abstract insertRefreshToken(token: { deviceId: string; tokenVersion: number; tokenHash: string; expiresAt: Date }): Promise<void>;
  abstract findRefreshToken(tokenHash: string): Promise<StoredRefreshToken | null>;
  /** Marks the token rotated if it is still live; false when another request got there first. */
  abstract rotateRefreshToken(id: string, now: Date): Promise<boolean>;
  abstract revokeRefreshTokens(deviceId: string, now: Date): Promise<void>;
}
