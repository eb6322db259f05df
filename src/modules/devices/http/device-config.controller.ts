import { Body, Controller, Get, Headers, HttpCode, Post, Res, type OnModuleInit } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentDevice, DeviceAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { noneMatchHolds } from '../../../shared/http/etag.js';
import { NotModifiedShortcuts } from '../../../shared/http/not-modified.js';
import { configTag, DeviceConfigService } from '../application/device-config.service.js';
import type { DevicePrincipal } from '../../../auth/principals.js';
import { ConfirmAppliedConfigRequest } from './device-config.dto.js';
import { DeviceConfigResponse } from './device.response.js';

@ApiTags('devices')
@Controller('device/config')
export class DeviceConfigController implements OnModuleInit {
  constructor(
    private readonly configs: DeviceConfigService,
    private readonly shortcuts: NotModifiedShortcuts,
  ) {}

  /** Unchanged polls are answered before the Nest pipeline, with this same ETag. */
  onModuleInit(): void {
    this.shortcuts.register('/api/v1/device/config', async (deviceId) => configTag(await this.configs.forGateway(deviceId)));
  }

  @Get()
  @DeviceAuth()
  @ApiOperation({
    operationId: 'getDeviceConfig',
    summary: 'The configuration this gateway should run',
    description:
      'Fleet defaults merged with the device\'s overrides; the same document as the register response. Poll with If-None-Match: while nothing changed the answer is a 304 without a body (and costs the service no database query).',
  })
  @ApiHeader({ name: 'If-None-Match', required: false, description: 'The ETag of the configuration the gateway holds.' })
  @ApiResponse({ status: 200, type: DeviceConfigResponse, description: 'The configuration, with its ETag.', headers: { ETag: { schema: { type: 'string' } } } })
  @ApiResponse({ status: 304, description: 'Unchanged since the ETag in If-None-Match.' })
  async get(
    @CurrentDevice() device: DevicePrincipal,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<DeviceConfigResponse | undefined> {
    const config = await this.configs.forGateway(device.deviceId);
    const etag = configTag(config);
    reply.header('ETag', etag).header('Cache-Control', 'private, no-cache');
    if (noneMatchHolds(ifNoneMatch, etag)) {
      reply.status(304);
      return undefined;
    }
    return DeviceConfigResponse.from(config);
  }

  @Post('applied')
  @HttpCode(204)
  @DeviceAuth()
  @ApiOperation({
    operationId: 'confirmDeviceConfig',
    summary: 'Confirm the configuration version the gateway applied',
    description: 'Idempotent; the dashboard shows the highest version confirmed and when. A version newer than the device\'s configuration is a 400 (CONFIG_VERSION_UNKNOWN).',
  })
  @ApiBody({ type: ConfirmAppliedConfigRequest })
  @ApiResponse({ status: 204, description: 'Recorded.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['CONFIG_VERSION_UNKNOWN'] })
  async applied(@CurrentDevice() device: DevicePrincipal, @Body() body: ConfirmAppliedConfigRequest): Promise<void> {
    await this.configs.recordApplied(device.deviceId, body.version);
  }
}
