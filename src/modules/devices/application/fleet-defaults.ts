import { INITIAL_FLEET_DEFAULTS, type ConfigPatch, type ConfigSettings, type FleetDefaults } from '../domain/device-config.js';

/** Port for the fleet-wide configuration defaults. The abstract class doubles as the injection token. */
export abstract class FleetDefaultsStore {
  abstract current(): Promise<FleetDefaults>;
  /** Applies the patch under a lock; `precondition` (If-Match) sees the defaults before it and may refuse. */
  abstract update(patch: ConfigPatch, now: Date, precondition: (current: FleetDefaults) => void): Promise<FleetDefaults>;
}

/** For unit tests of services that only read the defaults. */
export class InMemoryFleetDefaultsStore extends FleetDefaultsStore {
  constructor(private defaults: FleetDefaults = { settings: INITIAL_FLEET_DEFAULTS, revision: 1, updatedAt: new Date(0) }) {
    super();
  }

  current(): Promise<FleetDefaults> {
    return Promise.resolve(this.defaults);
  }

  update(patch: ConfigPatch, now: Date, precondition: (current: FleetDefaults) => void): Promise<FleetDefaults> {
    precondition(this.defaults);
    const settings = { ...this.defaults.settings, ...patch } as ConfigSettings;
    this.defaults = { settings, revision: this.defaults.revision + 1, updatedAt: now };
    return Promise.resolve(this.defaults);
  }
}
