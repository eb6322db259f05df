/** Every action the audit log records. */
export const AUDIT_ACTIONS = [
  'device.claimed',
  'device.released',
  'device.transferred',
  'device.decommissioned',
  'device.reopened',
  'device.re_registration_opened',
  'device.renamed',
  'device.config_changed',
  'config.defaults_changed',
  'alert_rules.changed',
  'alert_rules.defaults_changed',
  'firmware.release_created',
  'firmware.release_changed',
  'firmware.signing_key_added',
  'firmware.signing_key_revoked',
  'api_key.created',
  'api_key.revoked',
  'share.created',
  'share.revoked',
  'device.command_sent',
  'device.command_cancelled',
  'organization.created',
  'organization.changed',
  'organization.deleted',
  'organization.member_invited',
  'organization.member_changed',
  'organization.member_removed',
  'organization.transferred',
  'fleet.exported',
  'fleet.configured',
  'fleet.commanded',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AUDIT_ACTOR_KINDS = ['user', 'admin', 'system', 'device', 'organization'] as const;

export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];

/**
 * Who did it: a customer (and the API key they came with), an administrator, an organization's API
 * key (`userId` then holds the organization's id), or the service or a gateway itself.
 */
export interface AuditActor {
  kind: AuditActorKind;
  userId: string | null;
  apiKeyId: string | null;
}

/** Who asked, and from which client address (TRUST_PROXY-aware); null where no request was involved. */
export interface AuditContext {
  actor: AuditActor;
  clientAddress: string | null;
}

/** One change as its service reports it, inside the change's transaction. */
export interface NewAuditEntry {
  by: AuditContext;
  action: AuditAction;
  /** What was changed, `<kind>:<id>` (`device:gw-0001`, `api_key:<uuid>`, `config_defaults`). */
  target: string;
  /** The device concerned, if any: its owner reads the entry. */
  deviceId?: string | null;
  /**
   * The device's owner whose ownership the entry belongs to; left out, the device's owner as the
   * transaction sees it when the entry is written. Set it where that is not the right one (a
   * release: the one who released).
   */
  ownerId?: string | null;
  /** Small, and never a secret (no key, token, code or password). */
  detail?: Record<string, unknown>;
  at: Date;
}

export interface AuditEntry {
  id: string;
  at: Date;
  actor: AuditActor;
  action: AuditAction;
  deviceId: string | null;
  target: string;
  clientAddress: string | null;
  detail: Record<string, unknown>;
}

/** What the service itself does (scheduled work): no user, no address. */
export const SYSTEM: AuditContext = { actor: { kind: 'system', userId: null, apiKeyId: null }, clientAddress: null };

/**
 * An owner's view of an entry of their device: an administrator's account and address are
 * support's, not the customer's, and a transfer does not name the previous owner.
 */
export function asOwnerSees(entry: AuditEntry): AuditEntry {
  if (entry.actor.kind !== 'admin') return entry;
  const { previousOwnerId: _previous, ...detail } = entry.detail;
  return { ...entry, actor: { kind: 'admin', userId: null, apiKeyId: null }, clientAddress: null, detail };
}
