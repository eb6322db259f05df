import { Module } from '@nestjs/common';
import { BatteryEnergy } from './application/battery-energy.js';
import { BatteryEnergyStore } from './domain/battery-energy.store.js';
import { SqlBatteryEnergyStore } from './infrastructure/sql-battery-energy.store.js';

/**
 * Battery intelligence (issue 22): energy and cycles per battery, kept exact under late records.
 * The ingest statement (telemetry module) marks the hours its records touch; this module
 * recomputes them.
 */
@Module({
  providers: [BatteryEnergy, { provide: BatteryEnergyStore, useClass: SqlBatteryEnergyStore }],
  exports: [BatteryEnergy],
})
export class BatteriesModule {}
