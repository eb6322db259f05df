import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminAuth, CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { parseList } from '../../../shared/http/list-params.js';
import { parseIsoInstant } from '../../../shared/kernel/iso-instant.js';
import { AuditService } from '../application/audit.service.js';
import { AUDIT_ACTIONS } from '../domain/audit-entry.js';
import { AdminAuditQuery, AuditEntryResponse, AuditPageResponse, DeviceAuditQuery } from './audit.dto.js';

const instant = (value: string | undefined) => (value === undefined ? undefined : (parseIsoInstant(value) ?? undefined));

@ApiTags('dashboard')
@Controller('dashboard/devices/:deviceId/audit')
export class DeviceAuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @CustomerAuth()
  @ApiOperation({
    operationId: 'listDeviceAudit',
    summary: 'Who changed what on your device, newest first',
    description:
      "The owner only (the owners and admins of the organization that owns it), and only for that ownership: a later owner reads nothing of an earlier owner's actions. An administrator's account and address are not shown. Anyone else, the organization's operators and viewers and people the device is shared with included, gets 404.",
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: AuditPageResponse, description: 'A page of entries.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @Query() query: DeviceAuditQuery): Promise<AuditPageResponse> {
    const page = await this.audit.forOwner(customer.userId, deviceId, query.limit ?? 50, query.cursor);
    return { items: page.items.map(AuditEntryResponse.from), nextCursor: page.nextCursor };
  }
}

@ApiTags('admin')
@Controller('admin/audit')
export class AdminAuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @AdminAuth()
  @ApiOperation({ operationId: 'listAudit', summary: 'The whole audit log, newest first, filtered', description: 'Filters combine (all must hold); `from` is inclusive, `to` exclusive.' })
  @ApiResponse({ status: 200, type: AuditPageResponse, description: 'A page of entries.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async list(@Query() query: AdminAuditQuery): Promise<AuditPageResponse> {
    const actions = parseList(query.action, AUDIT_ACTIONS, 'action') ?? undefined;
    const page = await this.audit.forAdmin(
      { deviceId: query.deviceId, actorId: query.actorId, actions, from: instant(query.from), to: instant(query.to) },
      query.limit ?? 50,
      query.cursor,
    );
    return { items: page.items.map(AuditEntryResponse.from), nextCursor: page.nextCursor };
  }
}
