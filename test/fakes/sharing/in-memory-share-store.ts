import type { SqlRunner } from '../../../src/shared/database/sql.js';
import type { DeviceShare } from '../../../src/modules/sharing/domain/device-share.js';
import { ShareStore, type UpsertResult } from '../../../src/modules/sharing/domain/share.store.js';

/**
 * Shares in memory, for unit tests of the modules that end or bind them (claims, accounts). It knows
 * no devices or accounts: every upsert is by the owner, and `verified` names the addresses that
 * have a verified account.
 */
export class InMemoryShareStore extends ShareStore {
  readonly shares = new Map<string, DeviceShare & { grantedBy: string; userId: string | null }>();
  readonly verified = new Map<string, string>();

  async ownerEmail(): Promise<string | null> {
    return 'owner@example.com';
  }

  async upsert(share: DeviceShare, grantedBy: string, max: number): Promise<UpsertResult> {
    const existing = [...this.shares.values()].find((s) => s.deviceId === share.deviceId && s.email === share.email);
    if (existing) {
      existing.role = share.role;
      return { kind: 'updated', share: existing };
    }
    if ([...this.shares.values()].filter((s) => s.deviceId === share.deviceId).length >= max) return { kind: 'too-many' };
    this.shares.set(share.shareId, { ...share, grantedBy, userId: (share.email !== null && this.verified.get(share.email)) || null });
    return { kind: 'created', share };
  }

  async list(ownerId: string, deviceId: string, limit: number): Promise<DeviceShare[]> {
    return [...this.shares.values()].filter((s) => s.deviceId === deviceId && s.grantedBy === ownerId).slice(0, limit);
  }

  async delete(ownerId: string, deviceId: string, shareId: string): Promise<boolean> {
    const share = this.shares.get(shareId);
    return share?.deviceId === deviceId && share.grantedBy === ownerId && this.shares.delete(shareId);
  }

  async deleteOfDevice(_tx: SqlRunner, deviceId: string): Promise<void> {
    for (const [id, share] of this.shares) if (share.deviceId === deviceId) this.shares.delete(id);
  }

  async bind(userId: string, email: string): Promise<number> {
    let bound = 0;
    for (const share of this.shares.values()) {
      if (share.email === email && share.userId === null) {
        share.userId = userId;
        bound++;
      }
    }
    return bound;
  }

  async deleteOfUser(_tx: SqlRunner, userId: string): Promise<number> {
    let deleted = 0;
    for (const [id, share] of this.shares) if (share.grantedBy === userId || share.userId === userId) deleted += Number(this.shares.delete(id));
    return deleted;
  }

  async activeOf(userId: string): Promise<Map<string, string>> {
    return new Map([...this.shares.values()].filter((s) => s.userId === userId).map((s) => [s.deviceId, s.grantedBy]));
  }
}
