import { Module } from '@nestjs/common';
import { DashboardQueries } from './application/dashboard.queries.js';
import { DashboardService } from './application/dashboard.service.js';
import { DevicesModule } from '../devices/devices.module.js';
import { OtaModule } from '../ota/ota.module.js';
import { DashboardConfigController } from './http/dashboard-config.controller.js';
import { DashboardOtaController } from './http/dashboard-ota.controller.js';
import { DashboardController } from './http/dashboard.controller.js';

@Module({
  imports: [DevicesModule, OtaModule],
  controllers: [DashboardController, DashboardConfigController, DashboardOtaController],
  providers: [DashboardService, DashboardQueries],
})
export class DashboardModule {}
