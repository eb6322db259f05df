import { INITIAL_FLEET_DEFAULTS, type ConfigPatch, type ConfigSettings, type FleetDefaults } from '../../../src/modules/devices/domain/device-config.js';
import { FleetDefaultsStore } from '../../../src/modules/devices/application/fleet-defaults.js';

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
