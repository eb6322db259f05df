import { Module } from '@nestjs/common';
import { EventDispatch } from './application/event-dispatch.js';
import { EventLog } from './application/event-log.js';
import { EventReader } from './application/event-reader.js';
import { EventsService } from './application/events.service.js';
import { DashboardEventsController } from './http/dashboard-events.controller.js';

/** The event log: what happened to devices, recorded with the change, read by the dashboard. */
@Module({
  controllers: [DashboardEventsController],
  providers: [EventLog, EventsService, EventDispatch, EventReader],
  exports: [EventLog, EventDispatch, EventReader],
})
export class EventsModule {}
