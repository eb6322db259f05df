import { Controller, Get, Headers, Query, Res, StreamableFile } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { fileInstant } from '../../../shared/http/file-instant.js';
import { ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { noneMatchHolds } from '../../../shared/http/etag.js';
import { csvStream, historyBody, TelemetryExportQuery, TelemetryHistoryQuery, TelemetryHistoryResponse } from '../../telemetry/index.js';
import { DashboardService } from '../application/dashboard.service.js';
import { viewerOf } from './dashboard.controller.js';

/** A visible device's telemetry: the dashboard checks who sees what, the telemetry module answers and writes the answer. */
@ApiTags('dashboard')
@Controller('dashboard/devices')
export class DashboardTelemetryController {
  constructor(private readonly dashboard: DashboardService) {}

  @Get(':deviceId/telemetry/history')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'getTelemetryHistory',
    summary: 'Telemetry trends of a visible device',
    description: 'Aggregated per bucket in PostgreSQL (avg, min, max, count), or the raw records with `bucket=raw`. A device you cannot see is a 404, as if it did not exist.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiHeader({ name: 'If-None-Match', required: false, description: 'The ETag of an answer you hold for the same question.' })
  @ApiResponse({
    status: 200,
    type: TelemetryHistoryResponse,
    description: 'The series. A bucket answer whose range has ended (`to` not after now) carries a strong ETag, which changes only when a record lands in the range.',
    headers: { ETag: { schema: { type: 'string' }, description: 'Only on bucket answers over a range that has ended.' } },
  })
  @ApiResponse({ status: 304, description: 'Unchanged since the ETag in If-None-Match: no record landed in the range since.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async history(
    @CurrentCustomer() customer: CustomerPrincipal,
    @DeviceIdParam() deviceId: string,
    @Query() query: TelemetryHistoryQuery,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer | undefined> {
    const history = await this.dashboard.history(viewerOf(customer), deviceId, query);
    if (history.kind === 'buckets' && history.etag) {
      // Late records are possible at any time: the client revalidates before every use.
      reply.header('ETag', history.etag).header('Cache-Control', 'private, no-cache');
      if (noneMatchHolds(ifNoneMatch, history.etag)) {
        reply.status(304);
        return undefined;
      }
    }
    // The JSON text itself, as bytes (history-json.ts), sent as they are.
    void reply.type('application/json; charset=utf-8');
    return historyBody(history);
  }

  @Get(':deviceId/telemetry/export')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'exportTelemetry',
    summary: 'Every record of a visible device in a range, as CSV',
    description: [
      'Streams `text/csv` (RFC 4180, UTF-8, CRLF after every line): a header `ts,batteryId,` then one column per metric the records of the range hold, sorted by name; one line per record, ascending by (ts, batteryId).',
      '`ts` is ISO 8601 in UTC with milliseconds, values are written as the JSON answers write them, and a metric a record lacks is an empty field.',
      'The same records `bucket=raw` of the history pages through: a device you cannot see is a 404, and after a release a later owner exports from their claim on.',
      'At most EXPORT_MAX_PER_USER (default 2) exports of one account and EXPORT_MAX_CONCURRENT (default a third of the database pool) in all run at once on an instance; past that, 429 with Retry-After.',
      'An error after the first line has gone out (the database went away) ends the response without its last chunk, so a client never takes a cut file for a whole one.',
    ].join(' '),
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({
    status: 200,
    description: 'The records as CSV, streamed.',
    content: {
      'text/csv': {
        schema: { type: 'string', description: 'RFC 4180 CSV with a header line.' },
        example: 'ts,batteryId,soc,voltage\r\n2026-11-21T12:00:00.000Z,main,52.1,13.2\r\n2026-11-21T12:00:10.000Z,main,,13.2\r\n',
      },
    },
    headers: { 'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; filename="<deviceId>-<from>-<to>.csv", the range in ISO 8601 basic format (20261121T120000Z).' } },
  })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'], 429: ['TOO_MANY_EXPORTS'] })
  async export(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @Query() query: TelemetryExportQuery): Promise<StreamableFile> {
    const exported = await this.dashboard.export(viewerOf(customer), deviceId, query);
    return new StreamableFile(csvStream(exported), {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="${exported.deviceId}-${fileInstant(exported.from)}-${fileInstant(exported.to)}.csv"`,
    });
  }
}
