import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminAuth } from '../../../auth/auth.decorators.js';
import { decodeCursor, encodeCursor } from '../../../shared/http/cursor.js';
import { ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { DeliveriesService } from '../application/deliveries.service.js';
import { DeliveriesQuery, DeliveriesResponse, DeliveryResponse } from './deliveries.dto.js';

const isJobId = (value: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(value);

@ApiTags('admin')
@Controller('admin/deliveries')
export class AdminDeliveriesController {
  constructor(private readonly deliveries: DeliveriesService) {}

  @Get()
  @AdminAuth()
  @ApiOperation({
    operationId: 'listDeliveries',
    summary: 'Deliveries that ran out of retries (mails, webhook calls), oldest first',
    description: 'A delivery is retried with exponential backoff for more than 24 h (DELIVERY_RETRY_*), then listed here for 30 days. Shows where it went and why it failed, never its content.',
  })
  @ApiResponse({ status: 200, type: DeliveriesResponse, description: 'A page of failed deliveries.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@Query() query: DeliveriesQuery): Promise<DeliveriesResponse> {
    const limit = query.limit ?? 50;
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isJobId);
    const rows = await this.deliveries.failed({ limit: limit + 1, after });
    const items = rows.slice(0, limit);
    return { items: items.map(DeliveryResponse.from), nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1].deliveryId) : null };
  }
}
