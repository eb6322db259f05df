import type { AuditAction, AuditEntry } from './audit-entry.js';

export interface AuditFilters {
  deviceId?: string;
  actorId?: string;
  actions?: AuditAction[];
  from?: Date;
  to?: Date;
}

/** Where an owner's view of a device's log starts: null, from the beginning (first owner). */
export interface OwnerWindow {
  ownerId: string;
  since: Date | null;
}

/** The audit log as it is read: newest first, entries before the sequence `before` (null: the newest), at most `limit`. */
export abstract class AuditQueries {
  /** The window of `userId` as the device's owner (its organization's owner or admin), or null when they are not. */
  abstract ownerWindow(userId: string, deviceId: string): Promise<OwnerWindow | null>;

  /** The device's entries from the window's start on, of the window's owner or of none. */
  abstract forOwner(deviceId: string, window: OwnerWindow, before: string | null, limit: number): Promise<AuditEntry[]>;

  abstract forAdmin(filters: AuditFilters, before: string | null, limit: number): Promise<AuditEntry[]>;

  /** The organization's entries: of its devices while it owned them, and of the organization itself. */
  abstract forOrganization(organizationId: string, before: string | null, limit: number): Promise<AuditEntry[]>;
}
