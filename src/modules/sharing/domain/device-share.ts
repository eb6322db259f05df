export const SHARE_ROLES = ['viewer', 'installer'] as const;
export type ShareRole = (typeof SHARE_ROLES)[number];

/** What a viewer is to a device: its owner, an administrator, or the holder of a share. */
export const DEVICE_ROLES = ['owner', 'admin', 'installer', 'viewer'] as const;
export type DeviceRole = (typeof DEVICE_ROLES)[number];

/** Devices one owner may share with at most this many addresses: enough for a household or a site crew, few enough to list in one answer. */
export const MAX_SHARES_PER_DEVICE = 50;

export interface DeviceViewer {
  userId: string;
  isAdmin: boolean;
}

export interface DeviceShare {
  shareId: string;
  deviceId: string;
  /** The address shared with, or null for a share with an organization. */
  email: string | null;
  /** The organization shared with (all its members, an organization's viewer as a viewer), or null. */
  organizationId: string | null;
  role: ShareRole;
  createdAt: Date;
}

/** What the viewer may do on a device, and from when on they see its history (a later owner's view starts at the release before their claim). */
export interface DeviceGrant {
  role: DeviceRole;
  ownerId: string | null;
  visibleSince: Date | null;
}

/** Whether a role may change the device: configuration, alert rules, name and tags, acknowledgements. */
export const mayManage = (role: DeviceRole): boolean => role !== 'viewer';
