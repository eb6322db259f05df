import { Body, Controller, Get, Patch, Query } from '@nestjs/common';
import { Requester, type AuditContext } from '../../audit/index.js';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import type { Viewer } from '../domain/dashboard-queries.js';
import { DeviceLabelsService } from '../../devices/index.js';
import { DashboardService } from '../application/dashboard.service.js';
import { DashboardDeviceListResponse, DashboardDeviceResponse, DeviceLabelsPatchRequest, ListDevicesQuery } from './dashboard.dto.js';

export const viewerOf = (customer: CustomerPrincipal): Viewer => ({ userId: customer.userId, isAdmin: customer.isAdmin });

@ApiTags('dashboard')
@Controller('dashboard/devices')
export class DashboardController {
  constructor(
    private readonly dashboard: DashboardService,
    private readonly labels: DeviceLabelsService,
  ) {}

  @Get()
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'listDashboardDevices',
    summary: 'Devices you can see (yours and those shared with you; every device for administrators), filtered',
    description: 'Every filter given must hold. Pass nextCursor with the same filters for the next page: each matching device comes exactly once.',
  })
  @ApiResponse({ status: 200, type: DashboardDeviceListResponse, description: 'A page of devices, by deviceId.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @Query() query: ListDevicesQuery): Promise<DashboardDeviceListResponse> {
    const { limit, cursor, ...filters } = query;
    const page = await this.dashboard.devices(viewerOf(customer), limit ?? 50, cursor, filters);
    const defaults = await this.dashboard.fleetDefaults();
    return { items: page.items.map((row) => DashboardDeviceResponse.from(row, row.online, customer.isAdmin, defaults)), nextCursor: page.nextCursor };
  }

  @Get(':deviceId')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({ operationId: 'getDashboardDevice', summary: 'One visible device with its latest metrics' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: DashboardDeviceResponse, description: 'The device.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async get(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string): Promise<DashboardDeviceResponse> {
    const row = await this.dashboard.device(viewerOf(customer), deviceId);
    const defaults = await this.dashboard.fleetDefaults();
    return DashboardDeviceResponse.from(row, this.dashboard.isOnline(row, defaults), customer.isAdmin, defaults);
  }

  @Patch(':deviceId')
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'updateDashboardDevice',
    summary: 'Name or tag a device you own or install (administrators: any device)',
    description: 'A key left out stays as it is. `tags` replaces the whole set. A bad value is a 400 and changes nothing; a device you cannot see is a 404, one shared with you as viewer a 403 SHARE_ROLE.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiBody({ type: DeviceLabelsPatchRequest })
  @ApiResponse({ status: 200, type: DashboardDeviceResponse, description: 'The device as GET answers it, with its new name and tags.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['SHARE_ROLE'], 404: ['NOT_FOUND'] })
  async patch(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @DeviceIdParam() deviceId: string,
    @Body() body: DeviceLabelsPatchRequest,
  ): Promise<DashboardDeviceResponse> {
    const { owner_id } = await this.dashboard.manageable(viewerOf(customer), deviceId);
    await this.labels.relabel(deviceId, owner_id, body, by);
    return this.get(customer, deviceId);
  }
}
