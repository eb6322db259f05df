import { randomUUID } from 'node:crypto';
import { Device, type DeviceState } from '../domain/device.js';
import { DeviceRepository, type StoredRefreshToken } from '../domain/device.repository.js';

interface RefreshTokenRow extends StoredRefreshToken {
  tokenHash: string;
}

/**
 * DeviceRepository for unit tests. Stores copies of the state, as a database would, so a test sees
 * only what the service saved; `updateLocked` runs the changes of one device one after another.
 */
export class InMemoryDeviceRepository extends DeviceRepository {
  private readonly devices = new Map<string, DeviceState>();
  private readonly refreshTokens = new Map<string, RefreshTokenRow>();
  private readonly locks = new Map<string, Promise<unknown>>();

  async findById(deviceId: string): Promise<Device | null> {
    const state = this.devices.get(deviceId);
    return state ? Device.restore(state) : null;
  }

  async insertIfAbsent(device: Device): Promise<boolean> {
    if (this.devices.has(device.deviceId)) return false;
    this.devices.set(device.deviceId, device.toState());
    return true;
  }

  async updateLocked(deviceId: string, change: (device: Device) => Promise<boolean> | boolean): Promise<Device | null> {
    const previous = this.locks.get(deviceId) ?? Promise.resolve();
    const work = previous.then(async () => {
      const state = this.devices.get(deviceId);
      if (!state) return null;
      const device = Device.restore(state);
      if (await change(device)) this.devices.set(deviceId, device.toState());
      return device;
    });
    this.locks.set(deviceId, work.catch(() => undefined));
    return work;
  }

  async markCredentialsUsed(deviceId: string, now: Date): Promise<void> {
    const state = this.devices.get(deviceId);
    if (state && state.credentialsUsedAt === null) this.devices.set(deviceId, { ...state, credentialsUsedAt: now });
  }

  async insertRefreshToken(token: { deviceId: string; tokenVersion: number; tokenHash: string; expiresAt: Date }): Promise<void> {
    if ([...this.refreshTokens.values()].some((row) => row.tokenHash === token.tokenHash)) {
      throw new Error('duplicate refresh token hash');
    }
    const id = randomUUID();
    this.refreshTokens.set(id, { id, ...token, rotatedAt: null, revokedAt: null });
  }

  async findRefreshToken(tokenHash: string): Promise<StoredRefreshToken | null> {
    const row = [...this.refreshTokens.values()].find((candidate) => candidate.tokenHash === tokenHash);
    return row ? toStored(row) : null;
  }

  async rotateRefreshToken(id: string, now: Date): Promise<boolean> {
    const row = this.refreshTokens.get(id);
    if (!row || row.rotatedAt !== null || row.revokedAt !== null) return false;
    row.rotatedAt = now;
    return true;
  }

  async revokeRefreshTokens(deviceId: string, now: Date): Promise<void> {
    for (const row of this.refreshTokens.values()) {
      if (row.deviceId === deviceId && row.revokedAt === null) row.revokedAt = now;
    }
  }

  /** What is stored for the device's refresh tokens, oldest first. */
  refreshTokensOf(deviceId: string): StoredRefreshToken[] {
    return [...this.refreshTokens.values()].filter((row) => row.deviceId === deviceId).map(toStored);
  }
}

function toStored(row: RefreshTokenRow): StoredRefreshToken {
  return { id: row.id, deviceId: row.deviceId, tokenVersion: row.tokenVersion, expiresAt: row.expiresAt, rotatedAt: row.rotatedAt, revokedAt: row.revokedAt };
}
