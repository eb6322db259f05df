import type { SqlRunner } from '../../../shared/database/sql-runner.js';
import type { ConfigPatch, FleetDefaults } from '../domain/device-config.js';

/** Port for the fleet-wide configuration defaults. The abstract class doubles as the injection token. */
export abstract class FleetDefaultsStore {
  abstract current(): Promise<FleetDefaults>;
  /**
   * Applies the patch under a lock; `precondition` (If-Match) sees the defaults before it and may
   * refuse. `onChanged` runs in the same transaction when a setting really changed.
   */
  abstract update(patch: ConfigPatch, now: Date, precondition: (current: FleetDefaults) => void, onChanged?: (tx: SqlRunner) => Promise<void>): Promise<FleetDefaults>;
}
