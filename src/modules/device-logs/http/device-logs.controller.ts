import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiBody, ApiHeader, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CurrentDevice, CustomerAuth, DeviceAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal, DevicePrincipal } from '../../../auth/principals.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { decodeTimeCursor, encodeTimeCursor } from '../../../shared/http/cursor.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { DeviceLogsService } from '../application/device-logs.service.js';
import { levelsFrom, MAX_BATCH_BYTES } from '../domain/device-log.js';
import { LogBatchRequest, LogBatchResponse, logBatchPipe, LogLineResponse, LogsQuery, LogsResponse, type LogBatchBody } from './device-logs.dto.js';

const LINE_HASH = /^-?[0-9]{1,19}$/;

@ApiTags('logs')
@Controller()
export class DeviceLogsController {
  constructor(private readonly logs: DeviceLogsService) {}

  @Post('device/logs')
  @HttpCode(200)
  @DeviceAuth()
  @RouteConfig({ bodyLimit: MAX_BATCH_BYTES })
  @ApiOperation({
    operationId: 'uploadDeviceLogs',
    summary: 'Upload a batch of log lines (up to 256 KiB)',
    description:
      'Idempotent: a line is its time, level, tag and message, so a batch retried after a lost response stores nothing twice. A line more than 5 minutes in the future or older than LOG_RETENTION_DAYS is rejected on its own. Once the device stored its daily quota of bytes (LOG_BYTES_PER_DEVICE_PER_DAY, UTC days), the answer is 429 LOG_QUOTA_EXCEEDED with Retry-After until midnight UTC and nothing is stored.',
  })
  @ApiHeader({ name: 'Content-Encoding', required: false, enum: ['gzip', 'identity'], description: 'Send `gzip` to upload the body gzip-compressed; the 256 KiB limit holds for the body as sent and decompressed.' })
  @ApiBody({ type: LogBatchRequest })
  @ApiResponse({ status: 200, type: LogBatchResponse, description: 'Stored.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 429: ['LOG_QUOTA_EXCEEDED'] })
  async upload(@CurrentDevice() device: DevicePrincipal, @Body(logBatchPipe) body: LogBatchBody): Promise<LogBatchResponse> {
    return this.logs.ingest(
      device.deviceId,
      body.lines.map((line) => ({ ts: new Date(line.ts), level: line.level, tag: line.tag ?? null, message: line.message })),
    );
  }

  @Get('dashboard/devices/:deviceId/logs')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({ operationId: 'listDeviceLogs', summary: 'A visible device\'s log lines, newest first', description: 'A later owner sees the lines from the release before their claim on.' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: LogsResponse, description: 'A page of lines.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @Query() query: LogsQuery): Promise<LogsResponse> {
    const from = query.from === undefined ? null : new Date(query.from);
    const to = query.to === undefined ? null : new Date(query.to);
    if (from && to && from >= to) throw new ValidationFailedError([{ field: 'to', message: 'to must be after from' }]);
    const limit = query.limit ?? 100;
    const before = query.cursor === undefined ? null : (({ ts, key }) => ({ ts, lineHash: key }))(decodeTimeCursor(query.cursor, (key) => LINE_HASH.test(key)));
    const rows = await this.logs.list({ userId: customer.userId, isAdmin: customer.isAdmin }, deviceId, {
      from,
      to,
      levels: query.level === undefined ? null : levelsFrom(query.level),
      text: query.q ?? null,
      before,
      limit: limit + 1,
    });
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items: items.map(LogLineResponse.from), nextCursor: rows.length > limit ? encodeTimeCursor(last.ts, last.lineHash) : null };
  }
}
