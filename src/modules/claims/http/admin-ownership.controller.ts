import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { AdminOwnershipService } from '../application/admin-ownership.service.js';
import { TransferDeviceRequest } from './claims.requests.js';
import { ClaimResponse, DecommissionResponse, ReopenResponse } from './claims.responses.js';

@ApiTags('admin')
@Controller('admin/devices/:deviceId')
export class AdminOwnershipController {
  constructor(private readonly ownership: AdminOwnershipService) {}

  @Post('transfer')
  @HttpCode(200)
  @AdminAuth()
  @ApiOperation({
    operationId: 'transferDevice',
    summary: 'Give a device to another account or organization',
    description:
      'The personal organization of the verified account with `toEmail`, or the organization `toOrganizationId`, owns the device from now on, as after a claim: its members see the device’s history from this moment on, and the previous owner loses it as by a release. Transferring to the current owner changes nothing.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiBody({ type: TransferDeviceRequest })
  @ApiResponse({ status: 200, type: ClaimResponse, description: 'The new ownership.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 404: ['NOT_FOUND'], 409: ['DEVICE_DECOMMISSIONED'], 422: ['TRANSFER_RECIPIENT_INVALID'] })
  async transfer(@Requester() by: AuditContext, @DeviceIdParam() deviceId: string, @Body() body: TransferDeviceRequest): Promise<ClaimResponse> {
    return ClaimResponse.from(await this.ownership.transfer(by, deviceId, { email: body.toEmail, organizationId: body.toOrganizationId }));
  }

  @Post('decommission')
  @HttpCode(200)
  @AdminAuth()
  @ApiOperation({
    operationId: 'decommissionDevice',
    summary: 'Take a device out of service',
    description:
      'Its owner loses it, and its credentials are void at once: access tokens, refresh tokens and the device secret are refused on every instance. Registering the device id is refused (409 DEVICE_DECOMMISSIONED) until an administrator re-opens it. Asking again changes nothing.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: DecommissionResponse, description: 'Decommissioned.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async decommission(@Requester() by: AuditContext, @DeviceIdParam() deviceId: string): Promise<DecommissionResponse> {
    const decommissionedAt = await this.ownership.decommission(by, deviceId);
    return { deviceId, decommissionedAt: decommissionedAt.toISOString() };
  }

  @Post('reopen')
  @HttpCode(200)
  @AdminAuth()
  @ApiOperation({
    operationId: 'reopenDevice',
    summary: 'Let a decommissioned device register again',
    description:
      'Ends the decommission and opens the re-registration window: within it the gateway registers again with the same deviceId and hardwareId and gets new credentials (as after a factory reset). A device that is not decommissioned is left as it is (openUntil null).',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: ReopenResponse, description: 'Re-opened.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async reopen(@Requester() by: AuditContext, @DeviceIdParam() deviceId: string): Promise<ReopenResponse> {
    const openUntil = await this.ownership.reopen(by, deviceId);
    return { deviceId, openUntil: openUntil?.toISOString() ?? null };
  }
}
