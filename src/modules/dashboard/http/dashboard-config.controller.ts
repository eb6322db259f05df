import { Body, Controller, Get, Headers, Patch, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { ifMatchHolds } from '../../../shared/http/etag.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ConfigOverridesPatchRequest, DashboardDeviceConfigResponse, DeviceConfigService, DeviceOwnershipService } from '../../devices/index.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { NotFoundError } from '../../../shared/domain-error.js';
import { DashboardService } from '../application/dashboard.service.js';
import { Requester, type AuditContext } from '../../audit/index.js';

const CONFIG_ETAG = { ETag: { description: 'The version of the device\'s configuration: send it as If-Match to change it.', schema: { type: 'string' } } };

@ApiTags('dashboard')
@Controller('dashboard/devices/:deviceId/config')
export class DashboardConfigController {
  constructor(
    private readonly dashboard: DashboardService,
    private readonly configs: DeviceConfigService,
    private readonly devices: DeviceOwnershipService,
  ) {}

  @Get()
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({ operationId: 'getDashboardDeviceConfig', summary: 'A visible device\'s configuration, overrides and applied version' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: DashboardDeviceConfigResponse, description: 'The configuration, with its ETag (for If-Match).', headers: CONFIG_ETAG })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async get(
    @CurrentCustomer() customer: CustomerPrincipal,
    @DeviceIdParam() deviceId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<DashboardDeviceConfigResponse> {
    await this.dashboard.visibility({ userId: customer.userId, isAdmin: customer.isAdmin }, deviceId);
    // The row itself, not a DeviceSnapshot: the change feed does not announce a gateway's
    // confirmation (applied_config_version), so a snapshot would show a stale applied version.
    const device = await this.devices.findDevice(deviceId);
    if (!device) throw new NotFoundError('No visible device has this id.');
    const view = await this.configs.view(device);
    reply.header('ETag', view.etag);
    return DashboardDeviceConfigResponse.from(view);
  }

  @Patch()
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'updateDashboardDeviceConfig',
    summary: 'Set or clear the configuration overrides of a device you own, install, or administer',
    description:
      'A value overrides the fleet default, null goes back to it; unknown keys and out-of-range values are a 400 and change nothing. The device\'s configuration version grows when something changed. Send If-Match with the ETag you read: a stale one is a 412.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiHeader({ name: 'If-Match', required: false, description: 'The ETag of the configuration you read; a stale one is a 412 and changes nothing.', schema: { type: 'string' } })
  @ApiBody({ type: ConfigOverridesPatchRequest })
  @ApiResponse({ status: 200, type: DashboardDeviceConfigResponse, description: 'The device\'s resulting configuration, with its new ETag.', headers: CONFIG_ETAG })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['SHARE_ROLE'], 404: ['NOT_FOUND'], 412: ['PRECONDITION_FAILED'] })
  async patch(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @DeviceIdParam() deviceId: string,
    @Body() body: ConfigOverridesPatchRequest,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<DashboardDeviceConfigResponse> {
    await this.dashboard.manageable({ userId: customer.userId, isAdmin: customer.isAdmin }, deviceId);
    const view = await this.configs.patchOverrides(deviceId, body, (etag) => ifMatchHolds(ifMatch, etag), by);
    reply.header('ETag', view.etag);
    return DashboardDeviceConfigResponse.from(view);
  }
}
