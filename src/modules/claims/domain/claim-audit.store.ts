import type { SqlRunner } from '../../../shared/database/sql-runner.js';

/** What the audit table records as the outcome of an attempt. */
export type ClaimOutcome =
  | 'CLAIMED'
  | 'ALREADY_OWNED'
  | 'RELEASED'
  | 'RE_REGISTRATION_OPENED'
  | 'EMAIL_NOT_VERIFIED'
  | 'RATE_LIMITED'
  | 'INVALID_CLAIM'
  | 'DEVICE_ALREADY_CLAIMED'
  | 'CLAIM_CODE_REQUIRED'
  | 'DEVICE_SECRET_REQUIRED'
  | 'NOT_FOUND'
  | 'ERROR';

export interface ClaimAuditEntry {
  userId: string;
  deviceId: string;
  action: 'claim' | 'release' | 're-registration';
  outcome: ClaimOutcome;
  clientAddress: string;
  at: Date;
}

export abstract class ClaimAuditStore {
  /** With `tx`, the row is written in that transaction (an account deletion's releases). */
  abstract record(entry: ClaimAuditEntry, tx?: SqlRunner): Promise<void>;
}
