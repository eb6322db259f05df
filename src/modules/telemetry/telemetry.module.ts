import { Module } from '@nestjs/common';
import { ExportSlots } from './application/export-slots.js';
import { TelemetryFeed } from './application/telemetry-feed.js';
import { TelemetryHistoryService } from './application/telemetry-history.service.js';
import { TelemetryCompaction } from './application/telemetry-compaction.js';
import { TelemetryMaintenance } from './application/telemetry-maintenance.js';
import { TelemetryService } from './application/telemetry.service.js';
import { TelemetryCompactionStore } from './domain/telemetry-compaction.store.js';
import { TelemetryHistoryQueries } from './domain/telemetry-history.queries.js';
import { TelemetryPartitionStore } from './domain/telemetry-partition.store.js';
import { TelemetryRecordStore } from './domain/telemetry-record.store.js';
import { TelemetryController } from './http/telemetry.controller.js';
import { HistoryChunkCache } from './infrastructure/history-chunk-cache.js';
import { SqlTelemetryCompactionStore } from './infrastructure/sql-telemetry-compaction.store.js';
import { SqlTelemetryHistoryQueries } from './infrastructure/sql-telemetry-history.queries.js';
import { SqlTelemetryPartitionStore } from './infrastructure/sql-telemetry-partition.store.js';
import { SqlTelemetryRecordStore } from './infrastructure/sql-telemetry-record.store.js';

@Module({
  controllers: [TelemetryController],
  providers: [
    TelemetryService,
    TelemetryFeed,
    TelemetryMaintenance,
    TelemetryCompaction,
    TelemetryHistoryService,
    ExportSlots,
    HistoryChunkCache,
    { provide: TelemetryRecordStore, useClass: SqlTelemetryRecordStore },
    { provide: TelemetryPartitionStore, useClass: SqlTelemetryPartitionStore },
    { provide: TelemetryHistoryQueries, useClass: SqlTelemetryHistoryQueries },
    { provide: TelemetryCompactionStore, useClass: SqlTelemetryCompactionStore },
  ],
  exports: [TelemetryHistoryService, TelemetryFeed],
})
export class TelemetryModule {}
