import { Body, Controller, Get, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AdminAuth, CurrentCustomer, CurrentDevice, CustomerAuth, DeviceAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal, DevicePrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { decodeCursor, decodeTimeCursor, encodeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { CrashesService } from '../application/crashes.service.js';
import { CRASH_ID } from '../domain/crash-report.js';
import {
  CrashesQuery,
  CrashesResponse,
  CrashGroupDetailResponse,
  CrashGroupResponse,
  CrashGroupsQuery,
  CrashGroupsResponse,
  crashReportPipe,
  CrashReportRequest,
  CrashReportResponse,
  CrashResponse,
  type CrashReportBody,
} from './crashes.dto.js';

@ApiTags('crashes')
@Controller()
export class CrashesController {
  constructor(private readonly crashes: CrashesService) {}

  @Post('device/crashes')
  @DeviceAuth()
  @ApiOperation({
    operationId: 'reportCrash',
    summary: 'Report a crash or the reason of a reboot',
    description: 'Send it after the restart, from what the firmware kept across the reset (ESP-IDF core dump, esp_reset_reason()). Idempotent by crashId: a retried report is answered 200 with the group the first one went to.',
  })
  @ApiBody({ type: CrashReportRequest })
  @ApiResponse({ status: 201, type: CrashReportResponse, description: 'Stored.' })
  @ApiResponse({ status: 200, type: CrashReportResponse, description: 'Stored already (a retry).' })
  @ApiProblems(JSON_BODY_PROBLEMS)
  async report(@CurrentDevice() device: DevicePrincipal, @Body(crashReportPipe) body: CrashReportBody, @Res({ passthrough: true }) reply: FastifyReply): Promise<CrashReportResponse> {
    const { groupId, created } = await this.crashes.report(device.deviceId, {
      crashId: body.crashId,
      ts: new Date(body.ts),
      firmwareVersion: body.firmwareVersion,
      resetReason: body.resetReason,
      uptimeSec: body.uptimeSec,
      panic: body.panic ? { task: body.panic.task ?? null, excCause: body.panic.excCause ?? null, pc: body.panic.pc ?? null, backtrace: body.panic.backtrace } : null,
    });
    if (!created) void reply.status(200);
    return { crashId: body.crashId, groupId };
  }

  @Get('dashboard/devices/:deviceId/crashes')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({ operationId: 'listDeviceCrashes', summary: 'A visible device\'s crash reports and reboot reasons, newest first', description: 'A later owner sees the reports received from the release before their claim on.' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: CrashesResponse, description: 'A page of reports.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async ofDevice(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @Query() query: CrashesQuery): Promise<CrashesResponse> {
    const limit = query.limit ?? 50;
    const before = query.cursor === undefined ? null : (({ ts, key }) => ({ ts, crashId: key }))(decodeTimeCursor(query.cursor, (key) => CRASH_ID.test(key)));
    const rows = await this.crashes.ofDevice({ userId: customer.userId, isAdmin: customer.isAdmin }, deviceId, { before, limit: limit + 1 });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items: items.map(CrashResponse.from), nextCursor: rows.length > limit ? encodeTimeCursor(last.ts, last.crashId) : null };
  }

  @Get('admin/crash-groups')
  @AdminAuth()
  @ApiOperation({ operationId: 'listCrashGroups', summary: 'The fleet\'s crashes and reboot reasons, grouped by reset reason and top frames, most devices affected first' })
  @ApiResponse({ status: 200, type: CrashGroupsResponse, description: 'A page of groups.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async groups(@Query() query: CrashGroupsQuery): Promise<CrashGroupsResponse> {
    const limit = query.limit ?? 50;
    const offset = query.cursor === undefined ? 0 : Number(decodeCursor(query.cursor, (value) => /^[1-9][0-9]{0,6}$/.test(value)));
    const rows = await this.crashes.groups(offset, limit + 1);
    return { items: rows.slice(0, limit).map(CrashGroupResponse.from), nextCursor: rows.length > limit ? encodeCursor(String(offset + limit)) : null };
  }

  @Get('admin/crash-groups/:groupId')
  @AdminAuth()
  @ApiOperation({ operationId: 'getCrashGroup', summary: 'One crash group with its latest reports' })
  @ApiParam({ name: 'groupId', example: '9f2c1e4b6a4e0f8a' })
  @ApiResponse({ status: 200, type: CrashGroupDetailResponse, description: 'The group.' })
  @ApiProblems({ 404: ['NOT_FOUND'] })
  async group(@Param('groupId') groupId: string): Promise<CrashGroupDetailResponse> {
    const { group, samples } = await this.crashes.group(groupId);
    return { ...CrashGroupResponse.from(group), samples: samples.map(CrashResponse.from) };
  }
}
