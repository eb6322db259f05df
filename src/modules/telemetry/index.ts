/** The telemetry module's public surface: what other modules and the composition root may import. */
export { TelemetryModule } from './telemetry.module.js';
export { TelemetryHistoryQueries, type RawRecordRow, type RawRecordsQuery, type RecordExport, type RecordExportQuery, type SeriesQuery, type SeriesRow, type SeriesRuns } from './domain/telemetry-history.queries.js';
export { parseInstant, type HistoryRange } from './domain/history-query.js';
export { pointsOf, type Point, type Series } from './domain/history-series.js';
export { TelemetryHistoryService, type DevicesExport, type ExportParams, type History, type HistoryParams, type TelemetryExport } from './application/telemetry-history.service.js';
export { historyBody, historyJson } from './http/history-json.js';
export { CRLF, csvField, csvLines, csvStream } from './http/telemetry-csv.js';
export { TelemetryExportQuery, TelemetryHistoryQuery, TelemetryHistoryResponse } from './http/telemetry-history.dto.js';
export { TELEMETRY_VIEWS } from './infrastructure/telemetry-views.sql.js';
export { BATTERY_ID_PATTERN, METRIC_NAME, type TelemetryRecord } from './domain/telemetry-record.js';
export { DeviceReturns } from './domain/device-returns.js';
export { TelemetryFeed, type StoredTelemetry } from './application/telemetry-feed.js';
export { IngestMetrics, UnmeasuredIngest } from './application/ingest-metrics.js';
import {
  DeviceLatestMetricRecord,
  TelemetryDayRecord,
  TelemetryHourRecord,
  TelemetryReadingRecord,
  TelemetryRollup1dRecord,
  TelemetryRollup1hRecord,
  TelemetryRollup5mRecord,
  TelemetryRollup6hRecord,
} from './infrastructure/telemetry.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const TELEMETRY_RECORDS = [TelemetryReadingRecord, TelemetryRollup5mRecord, TelemetryRollup1hRecord, TelemetryRollup6hRecord, TelemetryRollup1dRecord, TelemetryDayRecord, TelemetryHourRecord, DeviceLatestMetricRecord];
