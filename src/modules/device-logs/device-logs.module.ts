import { Module } from '@nestjs/common';
import { SharingModule } from '../sharing/index.js';
import { DeviceLogFeed } from './application/device-log-feed.js';
import { DeviceLogPartitions } from './application/device-log-partitions.js';
import { DeviceLogsService } from './application/device-logs.service.js';
import { DeviceLogStore } from './domain/device-log.store.js';
import { DeviceLogsController } from './http/device-logs.controller.js';
import { SqlDeviceLogStore } from './infrastructure/sql-device-log.store.js';

/** Gateways' log lines: uploaded in batches against a daily quota, kept LOG_RETENTION_DAYS in day partitions, read from the dashboard. */
@Module({
  imports: [SharingModule],
  controllers: [DeviceLogsController],
  providers: [DeviceLogsService, DeviceLogPartitions, DeviceLogFeed, { provide: DeviceLogStore, useClass: SqlDeviceLogStore }],
  exports: [DeviceLogFeed],
})
export class DeviceLogsModule {}
