import { Body, Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiBody, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentDevice, DeviceAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import type { DevicePrincipal } from '../../../auth/principals.js';
import { TelemetryService } from '../application/telemetry.service.js';
import { DEFAULT_BATTERY_ID } from '../domain/telemetry-record.js';
import { IngestRateLimitGuard } from './ingest-rate-limit.guard.js';
import { ingestBodyPipe, IngestTelemetryRequest, IngestTelemetryResponse, type IngestBody } from './ingest-telemetry.request.js';

@ApiTags('telemetry')
@Controller('telemetry')
export class TelemetryController {
  constructor(private readonly telemetry: TelemetryService) {}

  @Post()
  @HttpCode(200)
  @DeviceAuth()
  @RouteConfig({ bodyLimit: 1024 * 1024 })
  @UseGuards(IngestRateLimitGuard)
  @ApiOperation({
    operationId: 'ingestTelemetry',
    summary: 'Upload a batch of 1–500 measurements (up to 1 MiB)',
    description:
      'Idempotent on (device, batteryId, ts): a batch retried after a lost response stores nothing twice. Answered after the records are committed. A record more than 5 minutes in the future or older than the retention window, or with a metric value that is not 0 or of a magnitude from 1e-12 to 1e12, is rejected on its own.',
  })
  @ApiHeader({
    name: 'Content-Encoding',
    required: false,
    enum: ['gzip', 'identity'],
    description: 'Send `gzip` to upload the body gzip-compressed (a 50-record batch shrinks to about an eighth). The 1 MiB limit holds for the body as sent and decompressed. Any other coding is `415` with `Accept-Encoding: gzip`.',
  })
  @ApiBody({ type: IngestTelemetryRequest })
  @ApiResponse({ status: 200, type: IngestTelemetryResponse, description: 'Stored.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 429: ['RATE_LIMITED'] })
  async ingest(@CurrentDevice() device: DevicePrincipal, @Body(ingestBodyPipe) body: IngestBody): Promise<IngestTelemetryResponse> {
    return this.telemetry.ingest(
      device.deviceId,
      body.records.map((record) => ({ ts: new Date(record.ts), batteryId: record.batteryId ?? DEFAULT_BATTERY_ID, metrics: record.metrics })),
    );
  }
}
