import { Readable } from 'node:stream';
import { Controller, Get, Query, StreamableFile } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags, OmitType } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { fileInstant } from '../../../shared/http/file-instant.js';
import { ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { FleetExport, FLEET_LATEST_COLUMNS } from '../application/fleet-export.js';
import { ListDevicesQuery } from './dashboard.dto.js';
import { viewerOf } from './dashboard.controller.js';

/** The device list's filters, without its paging: a fleet action takes every device they select. */
export class FleetFilterQuery extends OmitType(ListDevicesQuery, ['limit', 'cursor'] as const) {}


@ApiTags('dashboard')
@Controller('dashboard/fleet')
export class FleetController {
  constructor(private readonly fleet: FleetExport) {}

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
}
