import { Module } from '@nestjs/common';
import { TelemetryMaintenance } from './application/telemetry-maintenance.js';
import { TelemetryService } from './application/telemetry.service.js';
import { TelemetryController } from './http/telemetry.controller.js';
import { TelemetryPartitions } from './infrastructure/telemetry-partitions.js';
import { TelemetryWriter } from './infrastructure/telemetry-writer.js';

@Module({
  controllers: [TelemetryController],
  providers: [TelemetryService, TelemetryWriter, TelemetryPartitions, TelemetryMaintenance],
})
export class TelemetryModule {}
