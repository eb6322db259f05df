import type { AllowlistEntry } from './registration-allowlist.js';

/** Port: the deviceId/hardwareId pairs an administrator allowed to register (REGISTRATION_MODE=allowlist). */
export abstract class RegistrationAllowlistStore {
  abstract allows(entry: AllowlistEntry): Promise<boolean>;
  /** Adds the pairs (a pair already present is replaced); returns how many were stored. */
  abstract importEntries(entries: AllowlistEntry[], importedBy: string, now: Date): Promise<number>;
}
