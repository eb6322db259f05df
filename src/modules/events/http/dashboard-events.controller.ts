import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { decodeCursor, encodeCursor } from '../../../shared/http/cursor.js';
import { ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { parseList } from '../../../shared/http/list-params.js';
import { EventsService } from '../application/events.service.js';
import { DEVICE_EVENT_TYPES, sequenceOf } from '../domain/device-event.js';
import { DeviceEventResponse, EventsQuery, EventsResponse } from './events.dto.js';


@ApiTags('dashboard')
@Controller('dashboard/events')
export class DashboardEventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'listEvents',
    summary: 'What happened to the devices you can see, newest first',
    description:
      'Claims, releases, online/offline, alerts, OTA outcomes and applied configuration. A later owner sees a device’s events from the release before their claim on; an administrator sees all. A `deviceId` you cannot see gives an empty page.',
  })
  @ApiResponse({ status: 200, type: EventsResponse, description: 'A page of events.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @Query() query: EventsQuery): Promise<EventsResponse> {
    const limit = query.limit ?? 50;
    const before = query.cursor === undefined ? null : sequenceOf(decodeCursor(query.cursor, (value) => sequenceOf(value) !== null));
    const rows = await this.events.list({ userId: customer.userId, isAdmin: customer.isAdmin }, { deviceId: query.deviceId ?? null, types: parseList(query.type, DEVICE_EVENT_TYPES, 'type'), before, limit: limit + 1 });
    const items = rows.slice(0, limit);
    return { items: items.map(DeviceEventResponse.from), nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1].id) : null };
  }
}
