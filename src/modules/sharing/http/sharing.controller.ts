import { Body, Controller, Delete, Get, HttpCode, Post, Query, Res } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { UuidParam } from '../../../shared/http/list-params.js';
import { SharingService } from '../application/sharing.service.js';
import { CreateShareRequest, ShareListQuery, ShareListResponse, ShareResponse } from './sharing.dto.js';

/**
 * Sharing is the owner's: a signed-in session only (no API key), and anyone but the owner, a sharee
 * or an administrator included, gets the 404 of a device they do not own.
 */
@ApiTags('sharing')
@Controller('user/devices/:deviceId/shares')
export class SharingController {
  constructor(private readonly sharing: SharingService) {}

  @Post()
  @CustomerAuth()
  @ApiOperation({
    operationId: 'shareDevice',
    summary: 'Share a device you own with an e-mail address or an organization, as viewer or installer',
    description:
      'The same answer whether the address has an account or not: a share to an address without a verified account starts to count once that account is verified. A share with an organization (`organizationId`, e.g. an installer company) counts for every member, an organization\'s viewers as viewers. Sharing again with the same recipient changes the role (200). A release of the device ends every share.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiBody({ type: CreateShareRequest })
  @ApiResponse({ status: 201, type: ShareResponse, description: 'Shared.' })
  @ApiResponse({ status: 200, type: ShareResponse, description: 'The address had a share of the device already: its role is now the one given.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 404: ['NOT_FOUND'], 409: ['TOO_MANY_SHARES'] })
  async create(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @DeviceIdParam() deviceId: string,
    @Body() body: CreateShareRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ShareResponse> {
    const { share, created } = await this.sharing.share(customer.userId, deviceId, { email: body.email, organizationId: body.organizationId }, body.role, by);
    if (!created) void reply.status(200);
    return ShareResponse.from(share);
  }

  @Get()
  @CustomerAuth()
  @ApiOperation({
    operationId: 'listDeviceShares',
    summary: 'The shares of a device you own, oldest first',
    description: 'Keyset-paginated on (createdAt, shareId), like every list. The same items whether an address has an account or not.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: ShareListResponse, description: 'A page of the device\'s shares.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @Query() query: ShareListQuery): Promise<ShareListResponse> {
    const page = await this.sharing.list(customer.userId, deviceId, query.limit ?? 50, query.cursor);
    return { items: page.items.map(ShareResponse.from), nextCursor: page.nextCursor };
  }

  @Delete(':shareId')
  @HttpCode(204)
  @CustomerAuth()
  @ApiOperation({ operationId: 'revokeDeviceShare', summary: 'Revoke a share of a device you own: it ends at once, open streams included' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiParam({ name: 'shareId', format: 'uuid' })
  @ApiResponse({ status: 204, description: 'Revoked.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async revoke(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @DeviceIdParam() deviceId: string,
    @UuidParam('shareId', 'a share id') shareId: string,
  ): Promise<void> {
    await this.sharing.revoke(customer.userId, deviceId, shareId, by);
  }
}
