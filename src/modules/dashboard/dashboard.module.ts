import { Module } from '@nestjs/common';
import { DashboardService } from './application/dashboard.service.js';
import { DevicesModule } from '../devices/index.js';
import { OtaModule } from '../ota/index.js';
import { SharingModule } from '../sharing/index.js';
import { TelemetryModule } from '../telemetry/index.js';
import { DashboardQueries } from './domain/dashboard-queries.js';
import { DashboardConfigController } from './http/dashboard-config.controller.js';
import { DashboardOtaController } from './http/dashboard-ota.controller.js';
import { DashboardTelemetryController } from './http/dashboard-telemetry.controller.js';
import { DashboardController } from './http/dashboard.controller.js';
import { SqlDashboardQueries } from './infrastructure/sql-dashboard-queries.js';
import { FleetExport } from './application/fleet-export.js';
import { FleetController } from './http/fleet.controller.js';
import { AuditModule } from '../audit/index.js';
import { CommandsModule } from '../commands/index.js';
import { FleetActions } from './application/fleet-actions.js';

@Module({
  imports: [DevicesModule, OtaModule, TelemetryModule, SharingModule, AuditModule, CommandsModule],
  controllers: [DashboardController, DashboardTelemetryController, DashboardConfigController, DashboardOtaController, FleetController],
  providers: [DashboardService, FleetExport, FleetActions, { provide: DashboardQueries, useClass: SqlDashboardQueries }],
})
export class DashboardModule {}
