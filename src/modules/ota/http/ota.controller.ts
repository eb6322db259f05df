import { Body, Controller, Get, Headers, HttpCode, Post, Res, type OnModuleInit } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentDevice, DeviceAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { noneMatchHolds } from '../../../shared/http/etag.js';
import { NotModifiedShortcuts } from '../../../shared/http/not-modified.js';
import type { DevicePrincipal } from '../../../auth/principals.js';
import { OtaService } from '../application/ota.service.js';
import { IngestOtaEventsRequest, IngestOtaEventsResponse, LatestFirmwareResponse } from './ota.dto.js';

@ApiTags('ota')
@Controller('ota')
export class OtaController implements OnModuleInit {
  constructor(
    private readonly ota: OtaService,
    private readonly shortcuts: NotModifiedShortcuts,
  ) {}

  /** Unchanged polls are answered before the Nest pipeline, with this same ETag. */
  onModuleInit(): void {
    this.shortcuts.register('/api/v1/ota/latest', async (deviceId) => (await this.ota.latest(deviceId)).etag);
  }

  @Get('latest')
  @DeviceAuth()
  @ApiOperation({
    operationId: 'getLatestFirmware',
    summary: 'The firmware this gateway should install next, if any',
    description:
      'The highest live release for the gateway\'s hardware (or any), on its channel, newer than what it runs (numeric order; never a downgrade), whose minFromVersion it meets and whose staged rollout includes it. Poll with If-None-Match: unchanged answers are a 304 without a body and cost no database query.',
  })
  @ApiHeader({ name: 'If-None-Match', required: false })
  @ApiResponse({ status: 200, type: LatestFirmwareResponse, description: 'The answer, with its ETag.', headers: { ETag: { schema: { type: 'string' } } } })
  @ApiResponse({ status: 304, description: 'Unchanged since the ETag in If-None-Match.' })
  async latest(
    @CurrentDevice() device: DevicePrincipal,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<LatestFirmwareResponse | undefined> {
    const latest = await this.ota.latest(device.deviceId);
    reply.header('ETag', latest.etag).header('Cache-Control', 'private, no-cache');
    if (noneMatchHolds(ifNoneMatch, latest.etag)) {
      reply.status(304);
      return undefined;
    }
    await this.ota.recordOutcome(device.deviceId, latest);
    return LatestFirmwareResponse.from(latest);
  }

  @Post('events')
  @HttpCode(200)
  @DeviceAuth()
  @ApiOperation({
    operationId: 'reportOtaEvents',
    summary: 'Report 1–100 OTA runtime events',
    description:
      'Idempotent on (device, ts, type): a batch retried after a lost response stores nothing twice. download_progress events less than 30 s after a stored one of the same download are coalesced. install_succeeded and boot_confirmed set the device\'s firmwareVersion to toVersion, rolled_back sets it back to fromVersion. Answered after the commit.',
  })
  @ApiBody({ type: IngestOtaEventsRequest })
  @ApiResponse({ status: 200, type: IngestOtaEventsResponse, description: 'Stored.' })
  @ApiProblems(JSON_BODY_PROBLEMS)
  async events(@CurrentDevice() device: DevicePrincipal, @Body() body: IngestOtaEventsRequest): Promise<IngestOtaEventsResponse> {
    const outcome = await this.ota.ingest(
      device.deviceId,
      body.events.map((event) => ({
        ts: new Date(event.ts),
        type: event.type,
        fromVersion: event.fromVersion ?? null,
        toVersion: event.toVersion ?? null,
        progressPct: event.progressPct ?? null,
        errorCode: event.errorCode ?? null,
        message: event.message ?? null,
      })),
    );
    return IngestOtaEventsResponse.from(outcome);
  }
}
