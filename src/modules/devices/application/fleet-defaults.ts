import type { ConfigPatch, FleetDefaults } from '../domain/device-config.js';

/** Port for the fleet-wide configuration defaults. The abstract class doubles as the injection token. */
export abstract class FleetDefaultsStore {
  abstract current(): Promise<FleetDefaults>;
  /** Applies the patch under a lock; `precondition` (If-Match) sees the defaults before it and may refuse. */
  abstract update(patch: ConfigPatch, now: Date, precondition: (current: FleetDefaults) => void): Promise<FleetDefaults>;
}
