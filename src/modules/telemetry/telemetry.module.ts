import { Module } from '@nestjs/common';
import { ExportSlots } from './application/export-slots.js';
import { TelemetryFeed } from './application/telemetry-feed.js';
import { TelemetryHistoryService } from './application/telemetry-history.service.js';
import { TelemetryMaintenance } from './application/telemetry-maintenance.js';
import { TelemetryService } from './application/telemetry.service.js';
import { TelemetryHistory } from './domain/telemetry-history.js';
import { TelemetryPartitions } from './domain/telemetry-partitions.js';
import { TelemetryWriter } from './domain/telemetry-writer.js';
import { TelemetryController } from './http/telemetry.controller.js';
import { SqlTelemetryHistory } from './infrastructure/sql-telemetry-history.js';
import { SqlTelemetryPartitions } from './infrastructure/sql-telemetry-partitions.js';
import { SqlTelemetryWriter } from './infrastructure/sql-telemetry-writer.js';

@Module({
  controllers: [TelemetryController],
  providers: [
    TelemetryService,
    TelemetryFeed,
    TelemetryMaintenance,
    TelemetryHistoryService,
    ExportSlots,
    { provide: TelemetryWriter, useClass: SqlTelemetryWriter },
    { provide: TelemetryPartitions, useClass: SqlTelemetryPartitions },
    { provide: TelemetryHistory, useClass: SqlTelemetryHistory },
  ],
  exports: [TelemetryHistoryService, TelemetryFeed],
})
export class TelemetryModule {}
