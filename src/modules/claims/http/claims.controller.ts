import { Body, Controller, Delete, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import { ApiCredentialCheckUnavailable, ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { ClientAddress } from '../../../shared/http/client-address.decorator.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ClaimsService } from '../application/claims.service.js';
import { ClaimDeviceRequest, OwnedDevicesQuery } from './claims.requests.js';
import { ClaimResponse, OwnedDeviceListResponse, OwnedDeviceResponse, ReRegistrationResponse } from './claims.responses.js';

@ApiTags('claims')
@Controller('user/devices')
export class ClaimsController {
  constructor(private readonly claims: ClaimsService) {}

  @Post('claim')
  @HttpCode(200)
  @CustomerAuth()
  @ApiOperation({
    operationId: 'claimDevice',
    summary: 'Claim ownership of a gateway',
    description:
      'With the claim code from the gateway label, or for devices registered before claim codes with the device secret. Claiming a device you already own answers 200 again with the original claimedAt. `organizationId` claims it into an organization you are an owner, admin or operator of (a viewer there gets 403 ORGANIZATION_ROLE, a non-member 400 naming organizationId); the rules of the claim then read “you” as that organization.',
  })
  @ApiBody({ type: ClaimDeviceRequest })
  @ApiResponse({ status: 200, type: ClaimResponse, description: 'Claimed, or already yours.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['CLAIM_CODE_REQUIRED', 'DEVICE_SECRET_REQUIRED'], 401: ['INVALID_CLAIM'], 403: ['EMAIL_NOT_VERIFIED', 'ORGANIZATION_ROLE'], 409: ['DEVICE_ALREADY_CLAIMED'], 429: ['RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async claim(@CurrentCustomer() customer: CustomerPrincipal, @Body() body: ClaimDeviceRequest, @ClientAddress() address: string): Promise<ClaimResponse> {
    return ClaimResponse.from(await this.claims.claim(customer, body, address));
  }

  @Get()
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'listMyDevices',
    summary: 'The devices you own',
    description: 'Keyset-paginated on (claimedAt, deviceId), like every list: pass `nextCursor` as `cursor` for the next page.',
  })
  @ApiResponse({ status: 200, type: OwnedDeviceListResponse, description: 'A page of your devices, most recently claimed first.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @Query() query: OwnedDevicesQuery): Promise<OwnedDeviceListResponse> {
    const page = await this.claims.listDevices(customer, query.limit ?? 50, query.cursor);
    return { items: page.items.map(OwnedDeviceResponse.from), nextCursor: page.nextCursor };
  }

  @Delete(':deviceId')
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({ operationId: 'releaseDevice', summary: 'Give up ownership; the device can be claimed again with its code' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 204, description: 'Released.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async release(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @ClientAddress() address: string): Promise<void> {
    await this.claims.release(customer, deviceId, address);
  }

  @Post(':deviceId/re-registration')
  @HttpCode(200)
  @CustomerAuth()
  @ApiOperation({
    operationId: 'openReRegistration',
    summary: 'Let a factory-reset gateway register again',
    description: 'Owner or admin. Within the window one registration with the same deviceId and hardwareId replaces its secret and claim code and voids every old token; ownership and history stay.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: ReRegistrationResponse, description: 'Window open.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async openReRegistration(
    @CurrentCustomer() customer: CustomerPrincipal,
    @DeviceIdParam() deviceId: string,
    @ClientAddress() address: string,
  ): Promise<ReRegistrationResponse> {
    const openUntil = await this.claims.openReRegistration(customer, deviceId, address);
    return { deviceId, openUntil: openUntil.toISOString() };
  }
}
