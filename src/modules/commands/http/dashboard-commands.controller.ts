import { Body, Controller, Delete, Get, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentCustomer, CustomerAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { decodeCursor, encodeCursor } from '../../../shared/http/cursor.js';
import { DeviceIdParam } from '../../../shared/http/device-id.param.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { CommandsService } from '../application/commands.service.js';
import { commandSequenceOf, MAX_QUEUED_PER_DEVICE } from '../domain/device-command.js';
import { CommandResponse, CommandsQuery, CommandsResponse, SendCommandRequest } from './commands.dto.js';

const viewerOf = (customer: CustomerPrincipal) => ({ userId: customer.userId, isAdmin: customer.isAdmin });

@ApiTags('commands')
@Controller('dashboard/devices/:deviceId/commands')
export class DashboardCommandsController {
  constructor(private readonly commands: CommandsService) {}

  @Post()
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'sendDeviceCommand',
    summary: 'Send a command to a gateway you own, install or administer',
    description: `Queued for the gateway's next poll (a gateway holding a long poll gets it within about a second). Unknown types and bad parameters are a 400 and queue nothing; a device with ${MAX_QUEUED_PER_DEVICE} commands queued already answers 429 TOO_MANY_COMMANDS. Every send is in the audit log, every state change an event (command.queued, command.delivered, …).`,
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiBody({ type: SendCommandRequest })
  @ApiResponse({ status: 201, type: CommandResponse, description: 'Queued.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 403: ['SHARE_ROLE'], 404: ['NOT_FOUND'], 429: ['TOO_MANY_COMMANDS'] })
  async send(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @DeviceIdParam() deviceId: string, @Body() body: SendCommandRequest): Promise<CommandResponse> {
    return CommandResponse.from(await this.commands.send(viewerOf(customer), deviceId, body, by));
  }

  @Get()
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({ operationId: 'listDeviceCommands', summary: 'A visible device\'s commands, newest first', description: 'A later owner sees the commands sent from the release before their claim on.' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiResponse({ status: 200, type: CommandsResponse, description: 'A page of commands.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async list(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @Query() query: CommandsQuery): Promise<CommandsResponse> {
    const limit = query.limit ?? 50;
    const before = query.cursor === undefined ? null : commandSequenceOf(decodeCursor(query.cursor, (value) => commandSequenceOf(value) !== null));
    const rows = await this.commands.list(viewerOf(customer), deviceId, { before, limit: limit + 1 });
    const items = rows.slice(0, limit);
    return { items: items.map(CommandResponse.from), nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1].commandId) : null };
  }

  @Get(':commandId')
  @CustomerAuth({ apiKey: 'read' })
  @ApiOperation({ operationId: 'getDeviceCommand', summary: 'One command of a visible device' })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiParam({ name: 'commandId', example: 'cmd_42' })
  @ApiResponse({ status: 200, type: CommandResponse, description: 'The command.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'] })
  async get(@CurrentCustomer() customer: CustomerPrincipal, @DeviceIdParam() deviceId: string, @Param('commandId') commandId: string): Promise<CommandResponse> {
    return CommandResponse.from(await this.commands.get(viewerOf(customer), deviceId, commandId));
  }

  @Delete(':commandId')
  @CustomerAuth({ apiKey: 'write' })
  @ApiOperation({
    operationId: 'cancelDeviceCommand',
    summary: 'Cancel a command the gateway has not fetched yet',
    description: 'Cancelling a cancelled command answers it again; one the gateway fetched already (or that ended) is a 409 COMMAND_NOT_QUEUED.',
  })
  @ApiParam({ name: 'deviceId', example: 'gw-0001' })
  @ApiParam({ name: 'commandId', example: 'cmd_42' })
  @ApiResponse({ status: 200, type: CommandResponse, description: 'Cancelled.' })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 403: ['SHARE_ROLE'], 404: ['NOT_FOUND'], 409: ['COMMAND_NOT_QUEUED'] })
  async cancel(@CurrentCustomer() customer: CustomerPrincipal, @Requester() by: AuditContext, @DeviceIdParam() deviceId: string, @Param('commandId') commandId: string): Promise<CommandResponse> {
    return CommandResponse.from(await this.commands.cancel(viewerOf(customer), deviceId, commandId, by));
  }
}
