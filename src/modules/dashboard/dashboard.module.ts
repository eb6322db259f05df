import { Module } from '@nestjs/common';
import { DashboardQueries } from './application/dashboard.queries.js';
import { DashboardService } from './application/dashboard.service.js';
import { DashboardController } from './http/dashboard.controller.js';

@Module({
  controllers: [DashboardController],
  providers: [DashboardService, DashboardQueries],
})
export class DashboardModule {}
