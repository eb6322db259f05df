import { Module } from '@nestjs/common';
import { TelemetryMaintenance } from './application/telemetry-maintenance.js';
import { TelemetryService } from './application/telemetry.service.js';
import { TelemetryController } from './http/telemetry.controller.js';
import { TelemetryPartitions } from './infrastructure/telemetry-partitions.js';
import { TelemetryStore } from './infrastructure/telemetry-store.js';

@Module({
  controllers: [TelemetryController],
  providers: [TelemetryService, TelemetryStore, TelemetryPartitions, TelemetryMaintenance],
})
export class TelemetryModule {}
