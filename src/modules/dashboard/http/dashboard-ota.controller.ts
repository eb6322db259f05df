import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { parseList } from '../../../shared/http/list-params.js';
import { OTA_EVENT_TYPES, OtaHistoryItemResponse, OtaHistoryQuery, OtaHistoryResponse, OtaService } from '../../ota/index.js';
import { DashboardService } from '../application/dashboard.service.js';


/** An OTA event id as the cursor holds it: a bigint, so at most 2^63 − 1 (more is a database error, not a 400). */
const isEventId = (key: string): boolean => /^(0|[1-9][0-9]{0,18})$/.test(key) && BigInt(key) <= 9_223_372_036_854_775_807n;

@ApiTags('dashboard')
@Controller('dashboard/devices/:deviceId/ota/history')
export class DashboardOtaController {
  constructor(
    private readonly dashboard: DashboardService,
    private readonly ota: OtaService,
  ) {}

  @Get()
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'getOtaHistory',
    summary: 'OTA runtime events of a visible device, newest first',
    description: 'Keyset-paginated on (ts, id): events that arrive while you page never make an item repeat or go missing. A later owner sees events from the release that preceded their claim on.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: OtaHistoryResponse, description: 'A page of events.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async history(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @Query() query: OtaHistoryQuery): Promise<OtaHistoryResponse> {
    const types = parseList(query.type, OTA_EVENT_TYPES, 'type');
    const from = query.from === undefined ? null : new Date(query.from);
    const to = query.to === undefined ? null : new Date(query.to);
    if (from && to && from >= to) throw new ValidationFailedError([{ field: 'from', message: 'from must be before to' }]);
    const before = query.cursor === undefined ? null : decodeTimeCursor(query.cursor, isEventId);
    const viewer = { userId: customer.userId, isAdmin: customer.isAdmin };
    const visibleFrom = this.dashboard.visibleFrom(viewer, await this.dashboard.visibility(viewer, deviceId), from);
    const limit = query.limit ?? 50;
    const rows = await this.ota.history({ deviceId, from: visibleFrom, to, types, limit: limit + 1, before: before && { ts: before.ts, id: before.key } });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items: items.map(OtaHistoryItemResponse.from), nextCursor: rows.length > limit ? encodeTimeCursor(last.ts, last.id) : null };
  }
}
