import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res, type OnModuleInit } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentDevice, DeviceAuth } from '../../../auth/auth.decorators.js';
import type { DevicePrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { noneMatchHolds } from '../../../shared/http/etag.js';
import { NotModifiedShortcuts } from '../../../shared/http/not-modified.js';
import { GatewayCommandsService } from '../application/gateway-commands.service.js';
import { CommandResultRequest, CommandResultResponse, DeviceCommandsQuery, DeviceCommandsResponse, PendingCommandResponse } from './commands.dto.js';

@ApiTags('commands')
@Controller('device/commands')
export class DeviceCommandsController implements OnModuleInit {
  constructor(
    private readonly commands: GatewayCommandsService,
    private readonly shortcuts: NotModifiedShortcuts,
  ) {}

  /** Unchanged short polls are answered before the Nest pipeline, with this same ETag; a long poll (waitSec) waits here. */
  onModuleInit(): void {
    this.shortcuts.register('/api/v1/device/commands', async (deviceId) => (await this.commands.poll(deviceId)).etag, { unlessQuery: 'waitSec' });
  }

  @Get()
  @DeviceAuth()
  @ApiOperation({
    operationId: 'getDeviceCommands',
    summary: 'The commands waiting for this gateway',
    description:
      'Oldest first. Poll with If-None-Match: while no command comes or goes the answer is a 304 without a body (and costs no database query). With `waitSec` the request is held until a command arrives (sent on any instance) or the wait ends. Delivery is at least once: a command is in every answer until the gateway posts its final result, so drop one whose commandId you have run already.',
  })
  @ApiHeader({ name: 'If-None-Match', required: false, description: 'The ETag of the last answer the gateway received.' })
  @ApiResponse({ status: 200, type: DeviceCommandsResponse, description: 'The pending commands, with their ETag.', headers: { ETag: { schema: { type: 'string' } } } })
  @ApiResponse({ status: 304, description: 'Unchanged since the ETag in If-None-Match (after the wait, with waitSec).' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'] })
  async poll(
    @CurrentDevice() device: DevicePrincipal,
    @Query() query: DeviceCommandsQuery,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<DeviceCommandsResponse | undefined> {
    const holds = (etag: string) => noneMatchHolds(ifNoneMatch, etag);
    // A gateway that hangs up (lost Wi-Fi, its own timeout) frees its place among the waiters at once.
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    const { commands, etag } = await this.commands.longPoll(device.deviceId, (query.waitSec ?? 0) * 1000, holds, gone.signal);
    reply.header('ETag', etag).header('Cache-Control', 'private, no-cache');
    if (holds(etag)) {
      reply.status(304);
      return undefined;
    }
    await this.commands.delivered(device.deviceId, commands);
    return { commands: commands.map(PendingCommandResponse.from) };
  }

  @Post(':commandId/result')
  @HttpCode(200)
  @DeviceAuth()
  @ApiOperation({
    operationId: 'reportCommandResult',
    summary: 'Report what became of a command',
    description:
      'Idempotent: the same result again answers the command as it is. `accepted` notes that the gateway started (a final result follows); `succeeded`, `failed` and `rejected` end the command. A different final result for a command that ended already (expired, cancelled, reported) is a 409 COMMAND_FINISHED: drop the command.',
  })
  @ApiParam({ name: 'commandId', example: 'cmd_42' })
  @ApiBody({ type: CommandResultRequest })
  @ApiResponse({ status: 200, type: CommandResultResponse, description: 'Recorded; the command\'s state.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 404: ['NOT_FOUND'], 409: ['COMMAND_FINISHED'] })
  async result(@CurrentDevice() device: DevicePrincipal, @Param('commandId') commandId: string, @Body() body: CommandResultRequest): Promise<CommandResultResponse> {
    return CommandResultResponse.from(await this.commands.report(device.deviceId, commandId, body.status, body.output ?? null));
  }
}
