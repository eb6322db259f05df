/** The device-logs module's public surface: what other modules and the composition root may import. */
export { DeviceLogsModule } from './device-logs.module.js';
export { DeviceLogFeed, type StoredLogLines } from './application/device-log-feed.js';
export type { LogLine } from './domain/device-log.js';
import { DeviceLogRecord, DeviceLogUsageRecord } from './infrastructure/device-log.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const DEVICE_LOGS_RECORDS = [DeviceLogRecord, DeviceLogUsageRecord];
