import { Module } from '@nestjs/common';
import { BatteriesService } from './application/batteries.service.js';
import { BatteryEnergy } from './application/battery-energy.js';
import { BatteryEnergyStore } from './domain/battery-energy.store.js';
import { BatteryProfilesStore } from './domain/battery-profiles.store.js';
import { SqlBatteryEnergyStore } from './infrastructure/sql-battery-energy.store.js';
import { SqlBatteryProfilesStore } from './infrastructure/sql-battery-profiles.store.js';
import { AdminBatteriesController } from './http/admin-batteries.controller.js';
import { DashboardBatteriesController } from './http/dashboard-batteries.controller.js';
import { SharingModule } from '../sharing/index.js';

/**
 * Battery intelligence: energy and cycles per battery, kept exact under late records.
 * The ingest statement (telemetry module) marks the hours its records touch; this module
 * recomputes them.
 */
@Module({
  imports: [SharingModule],
  controllers: [DashboardBatteriesController, AdminBatteriesController],
  providers: [
    BatteriesService,
    BatteryEnergy,
    { provide: BatteryEnergyStore, useClass: SqlBatteryEnergyStore },
    { provide: BatteryProfilesStore, useClass: SqlBatteryProfilesStore },
  ],
  exports: [BatteriesService, BatteryEnergy],
})
export class BatteriesModule {}
