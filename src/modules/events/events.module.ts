import { Module } from '@nestjs/common';
import { EventDispatch } from './application/event-dispatch.js';
import { EventLog } from './application/event-log.js';
import { EventsService } from './application/events.service.js';
import { DeviceEventStore } from './domain/device-event.store.js';
import { DeviceEventQueries } from './domain/device-event.queries.js';
import { DashboardEventsController } from './http/dashboard-events.controller.js';
import { SqlDeviceEventStore } from './infrastructure/sql-device-event.store.js';
import { SqlDeviceEventQueries } from './infrastructure/sql-device-event.queries.js';

/** The event log: what happened to devices, recorded with the change, read by the dashboard. */
@Module({
  controllers: [DashboardEventsController],
  providers: [EventLog, EventsService, EventDispatch, { provide: DeviceEventQueries, useClass: SqlDeviceEventQueries }, { provide: DeviceEventStore, useClass: SqlDeviceEventStore }],
  exports: [EventLog, EventDispatch, DeviceEventQueries],
})
export class EventsModule {}
