/** The batteries module's public surface: what other modules and the composition root may import. */
export { BatteriesModule } from './batteries.module.js';
export { BatteryEnergy } from './application/battery-energy.js';
import { BATTERIES_RECORDS } from './infrastructure/battery.records.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export { BATTERIES_RECORDS };
