import { Body, Controller, Get, Headers, Patch, Query, Res, StreamableFile } from '@nestjs/common';
import { Requester, type AuditContext } from '../../audit/index.js';
import type { FastifyReply } from 'fastify';
import { ApiBody, ApiHeader, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { noneMatchHolds } from '../../../shared/http/etag.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import type { Viewer } from '../domain/dashboard-queries.js';
import { DeviceLabelsService } from '../../devices/index.js';
import { DashboardService } from '../application/dashboard.service.js';
import { historyJson } from './history-json.js';
import { DashboardDeviceListResponse, DashboardDeviceResponse, DeviceLabelsPatchRequest, ListDevicesQuery, TelemetryExportQuery, TelemetryHistoryQuery, TelemetryHistoryResponse } from './dashboard.dto.js';
import { csvStream } from './telemetry-csv.js';

const viewerOf = (customer: CustomerPrincipal): Viewer => ({ userId: customer.userId, isAdmin: customer.isAdmin });

/** An instant in a file name: ISO 8601 basic format, without the colons file systems refuse ("20261121T120000Z"). */
const fileInstant = (instant: Date): string => instant.toISOString().replace(/[-:]/g, '').replace(/\.000Z$/, 'Z');

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
  ): Promise<string | undefined> {
    const history = await this.dashboard.history(viewerOf(customer), deviceId, query);
    if (history.kind === 'buckets' && history.etag) {
      // Late records are possible at any time: the client revalidates before every use.
      reply.header('ETag', history.etag).header('Cache-Control', 'private, no-cache');
      if (noneMatchHolds(ifNoneMatch, history.etag)) {
        reply.status(304);
        return undefined;
      }
    }
    // The JSON text itself (history-json.ts), sent as it is.
    void reply.type('application/json; charset=utf-8');
    return historyJson(history);
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
