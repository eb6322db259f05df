import { Readable } from 'node:stream';
import { Body, Controller, Get, HttpCode, Post, Query, StreamableFile } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { fileInstant } from '../../../shared/http/file-instant.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { MAX_QUEUED_PER_DEVICE, SendCommandRequest } from '../../commands/index.js';
import { ConfigOverridesPatchRequest } from '../../devices/index.js';
import { FleetActions } from '../application/fleet-actions.js';
import { FleetExport, FLEET_LATEST_COLUMNS, FLEET_TELEMETRY_COLUMNS } from '../application/fleet-export.js';
import { viewerOf } from './dashboard.controller.js';
import { FleetCommandedResponse, FleetConfiguredResponse, FleetFilterQuery, FleetTelemetryQuery } from './fleet.dto.js';

const SELECTION = 'The devices are those the device list (GET /api/v1/dashboard/devices) selects with the same filters, every page of it: one organization with organizationId.';

@ApiTags('dashboard')
@Controller('dashboard/fleet')
export class FleetController {
  constructor(
    private readonly fleet: FleetExport,
    private readonly actions: FleetActions,
  ) {}

  @Get('latest')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'exportFleetLatest',
    summary: 'The latest values of every device the filters select, as CSV',
    description: [
      `Streams \`text/csv\` (RFC 4180, UTF-8, CRLF after every line): a header \`${FLEET_LATEST_COLUMNS.join(',')}\`, then one line per device and latest metric (a device with none: one line, the last four fields empty), by deviceId.`,
      'The same devices and filters as the device list (GET /api/v1/dashboard/devices), every page of it: one organization with organizationId, tags space-separated, instants ISO 8601 UTC.',
      'Read a page of devices at a time as the answer is taken, never the whole fleet at once. Each export is one audit entry naming how many devices it held.',
    ].join(' '),
  })
  @ApiResponse({
    status: 200,
    description: 'The latest values as CSV, streamed.',
    content: {
      'text/csv': {
        schema: { type: 'string', description: 'RFC 4180 CSV with a header line.' },
        example: `${FLEET_LATEST_COLUMNS.join(',')}\r\ngw-0001,Garage,roof site-7,esp32s3-7c:df:a1:0b:22:c4,0.1.4,true,2026-12-06T09:00:00.000Z,main,soc,2026-12-06T09:00:00.000Z,52.1\r\n`,
      },
    },
  })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async latest(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @Query() query: FleetFilterQuery): Promise<StreamableFile> {
    const exported = await this.fleet.latest(viewerOf(customer), query, by);
    return new StreamableFile(Readable.from(exported.lines, { objectMode: false, highWaterMark: 64 * 1024 }), {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="fleet-latest-${fileInstant(exported.startedAt)}.csv"`,
    });
  }

  @Get('telemetry')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({
    operationId: 'exportFleetTelemetry',
    summary: 'Every record in a range of every device the filters select, as CSV',
    description: [
      `Streams \`text/csv\` (RFC 4180, UTF-8, CRLF after every line): a header \`${FLEET_TELEMETRY_COLUMNS.join(',')},\` then one column per metric the selected devices' records of the range hold, sorted by name; then, device by device (by deviceId), one line per record ascending by (ts, batteryId), written as the per-device export (GET …/devices/{deviceId}/telemetry/export) writes them.`,
      `${SELECTION} Each device's records start where your view of it does: after a release, a later owner exports from their claim on.`,
      'The same range as the per-device export: default the last 24 hours, at most 366 days; a bad range or filter is a 400 before anything is sent.',
      "The columns are read first, a page of devices at a time; then each device's records are read in batches as the answer is taken, never the whole answer at once. Should a device's records gain a metric the header lacks while the export runs, the response ends without its last chunk, as on any error after the first line (a client never takes a cut file for a whole one): ask again.",
      'One export of the per-device export\'s caps (EXPORT_MAX_PER_USER, EXPORT_MAX_CONCURRENT) for as long as it runs; past them, 429 with Retry-After. Each export is one audit entry naming how many devices it held.',
    ].join(' '),
  })
  @ApiResponse({
    status: 200,
    description: 'The records as CSV, streamed.',
    content: {
      'text/csv': {
        schema: { type: 'string', description: 'RFC 4180 CSV with a header line.' },
        example: `${FLEET_TELEMETRY_COLUMNS.join(',')},soc,voltage\r\ngw-0001,2026-11-21T12:00:00.000Z,main,52.1,13.2\r\ngw-0002,2026-11-21T12:00:00.000Z,main,,13.1\r\n`,
      },
    },
    headers: { 'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; filename="fleet-telemetry-<from>-<to>.csv", the range in ISO 8601 basic format (20261121T120000Z).' } },
  })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 429: ['TOO_MANY_EXPORTS'] })
  async telemetry(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @Query() query: FleetTelemetryQuery): Promise<StreamableFile> {
    const { from, to, batteryId, format: _format, ...filters } = query;
    const exported = await this.fleet.telemetry(viewerOf(customer), filters, { from, to, batteryId }, by);
    const stream = Readable.from(exported.lines, { objectMode: false, highWaterMark: 64 * 1024 });
    // Also when the answer never started (a generator that never ran has no finally): the slot and the audit entry.
    stream.once('close', () => {
      exported.close().catch(() => undefined);
    });
    return new StreamableFile(stream, {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="fleet-telemetry-${fileInstant(exported.from)}-${fileInstant(exported.to)}.csv"`,
    });
  }

  @Post('config')
  @HttpCode(200)
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'configureFleet',
    summary: 'Set or clear configuration overrides of every device the filters select that you may configure',
    description: [
      'The body a device\'s PATCH /api/v1/dashboard/devices/{deviceId}/config takes: a value overrides the fleet default, null goes back to it.',
      'Unknown keys and out-of-range values (or a bad filter) are a 400 and change no device: the body is checked before any device is touched.',
      `${SELECTION} Devices shared with you as a viewer (by a share or an organization role) are skipped and counted, not a 403.`,
      'Each device changes in its own transaction, with its own device.config_changed audit entry when a value changed and its configuration version grown, as the PATCH does (no If-Match here); the devices are read a page at a time.',
      'The whole change is one fleet.configured audit entry with the counts, the patch and the filters.',
    ].join(' '),
  })
  @ApiBody({ type: ConfigOverridesPatchRequest })
  @ApiResponse({ status: 200, type: FleetConfiguredResponse, description: 'How many selected devices have the change, and how many were skipped.' })
  @ApiProblems(JSON_BODY_PROBLEMS)
  async configure(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @Query() query: FleetFilterQuery,
    @Body() body: ConfigOverridesPatchRequest,
  ): Promise<FleetConfiguredResponse> {
    return this.actions.configure(viewerOf(customer), query, body, by);
  }

  @Post('commands')
  @HttpCode(200)
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'sendFleetCommand',
    summary: 'Send a command to every device the filters select that you may command',
    description: [
      "The body a device's POST /api/v1/dashboard/devices/{deviceId}/commands takes; each device gets a command of its own, queued for its gateway's next poll.",
      'Unknown types and bad parameters (or a bad filter) are a 400 and queue nothing: the body is checked before any device is touched.',
      `${SELECTION} Devices shared with you as a viewer (by a share or an organization role) are skipped and counted, not a 403.`,
      `A device with ${MAX_QUEUED_PER_DEVICE} commands queued already is skipped and counted in queueFull, not a 429 of the whole action: the others still get the command, and the answer says how many did not.`,
      'Each send is a device.command_sent audit entry and a command.queued event, as the single-device send; the whole action is one fleet.commanded audit entry with the counts and the filters.',
    ].join(' '),
  })
  @ApiBody({ type: SendCommandRequest })
  @ApiResponse({ status: 200, type: FleetCommandedResponse, description: 'How many selected devices the command was queued for, and how many were skipped or had a full queue.' })
  @ApiProblems(JSON_BODY_PROBLEMS)
  async command(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Requester() by: AuditContext,
    @Query() query: FleetFilterQuery,
    @Body() body: SendCommandRequest,
  ): Promise<FleetCommandedResponse> {
    return this.actions.command(viewerOf(customer), query, body, by);
  }
}
