import { Body, Controller, Get, Headers, Patch, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AdminAuth } from '../../../auth/auth.decorators.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { ifMatchHolds } from '../../../shared/http/etag.js';
import { defaultsTag, DeviceConfigService } from '../application/device-config.service.js';
import { ConfigDefaultsPatchRequest, ConfigDefaultsResponse } from './device-config.dto.js';

const DEFAULTS_ETAG = { ETag: { description: 'The version of the fleet defaults: send it as If-Match to change them.', schema: { type: 'string' } } };

@ApiTags('admin')
@Controller('admin/config/defaults')
export class AdminConfigController {
  constructor(private readonly configs: DeviceConfigService) {}

  @Get()
  @AdminAuth()
  @ApiOperation({ operationId: 'getConfigDefaults', summary: 'Fleet configuration defaults' })
  @ApiResponse({ status: 200, type: ConfigDefaultsResponse, description: 'The defaults, with their ETag.', headers: DEFAULTS_ETAG })
  async get(@Res({ passthrough: true }) reply: FastifyReply): Promise<ConfigDefaultsResponse> {
    const defaults = await this.configs.currentDefaults();
    reply.header('ETag', defaultsTag(defaults));
    return ConfigDefaultsResponse.from(defaults);
  }

  @Patch()
  @AdminAuth()
  @ApiOperation({
    operationId: 'updateConfigDefaults',
    summary: 'Change fleet configuration defaults',
    description: 'Every device without an override of a changed key gets a new configuration version. Send If-Match with the ETag you read to avoid overwriting a change you have not seen (412 otherwise).',
  })
  @ApiHeader({ name: 'If-Match', required: false, description: 'The ETag of the defaults you read; a stale one is a 412 and changes nothing.', schema: { type: 'string' } })
  @ApiBody({ type: ConfigDefaultsPatchRequest })
  @ApiResponse({ status: 200, type: ConfigDefaultsResponse, description: 'The defaults after the change, with their new ETag.', headers: DEFAULTS_ETAG })
  @ApiProblems(JSON_BODY_PROBLEMS, { 412: ['PRECONDITION_FAILED'] })
  async patch(
    @Requester() by: AuditContext,
    @Body() body: ConfigDefaultsPatchRequest,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ConfigDefaultsResponse> {
    const defaults = await this.configs.patchDefaults(body, (etag) => ifMatchHolds(ifMatch, etag), by);
    reply.header('ETag', defaultsTag(defaults));
    return ConfigDefaultsResponse.from(defaults);
  }
}
