import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { decodeCursor, encodeCursor } from '../../../shared/http/cursor.js';
import { BatteriesService } from '../application/batteries.service.js';
import { BatteryOutlierResponse, BatteryOutliersQuery, BatteryOutliersResponse } from './admin-batteries.dto.js';

@ApiTags('admin')
@Controller('admin/batteries')
export class AdminBatteriesController {
  constructor(private readonly batteries: BatteriesService) {}

  @Get('outliers')
  @AdminAuth()
  @ApiOperation({
    operationId: 'getBatteryOutliers',
    summary: 'Batteries furthest from their peers',
    description: [
      'Profiled batteries grouped by chemistry and capacity, each measured against its group’s median, largest deviation first.',
      '`cellImbalance`: the newest cellVoltageMax − cellVoltageMin (V). `sohDecline`: soh points lost per 30 days, first to last daily average of the last 30 days (two days at least).',
      '`selfDischarge`: SoC points lost per day while idle, from consecutive hours of the last 7 days in which the current stayed within ±capacity ÷ 1000.',
      'A battery without the data for the metric is left out.',
    ].join(' '),
  })
  @ApiResponse({ status: 200, type: BatteryOutliersResponse, description: 'The ranking.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async outliers(@Query() query: BatteryOutliersQuery): Promise<BatteryOutliersResponse> {
    const offset = query.cursor === undefined ? 0 : Number(decodeCursor(query.cursor, (value) => /^[1-9]\d{0,6}$/.test(value)));
    const limit = query.limit ?? 50;
    const ranked = await this.batteries.outliers(query.metric);
    const items = ranked.slice(offset, offset + limit);
    return { metric: query.metric, items: items.map(BatteryOutlierResponse.from), nextCursor: offset + limit < ranked.length ? encodeCursor(String(offset + limit)) : null };
  }
}
