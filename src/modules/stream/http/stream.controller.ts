import { Controller, Get, Headers, HttpCode, Post, Query, Res } from '@nestjs/common';
import { ApiExtraModels, ApiHeader, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentCustomer, CustomerAuth, CustomerOrTicketAuth } from '../../../auth/auth.decorators.js';
import type { CustomerPrincipal } from '../../../auth/principals.js';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { ApiCredentialCheckUnavailable, ApiProblems } from '../../../shared/http/api-problems.decorator.js';
import { NoStore } from '../../../shared/http/no-store.decorator.js';
import { DeviceEventResponse, sequenceOf } from '../../events/index.js';
import { StreamTickets } from '../application/stream-tickets.js';
import { StreamsService } from '../application/streams.service.js';
import { ResponseSink } from './response-sink.js';
import { STREAM_MESSAGE_SCHEMA, StreamQuery, StreamLogLine, StreamTelemetry, StreamTicketResponse } from './stream.dto.js';

@ApiTags('dashboard')
@ApiExtraModels(StreamTelemetry, StreamLogLine, DeviceEventResponse)
@Controller('dashboard/stream')
export class StreamController {
  constructor(
    private readonly streams: StreamsService,
    private readonly tickets: StreamTickets,
  ) {}

  @Post('tickets')
  @HttpCode(201)
  @CustomerAuth()
  @NoStore()
  @ApiOperation({
    operationId: 'createStreamTicket',
    summary: 'A single-use ticket to open the stream from a browser',
    description: 'EventSource cannot send an Authorization header: pass this ticket as `?ticket=` instead. Valid once, for 60 s, for the signed-in account and session.',
  })
  @ApiResponse({ status: 201, type: StreamTicketResponse, description: 'The ticket.' })
  createTicket(@CurrentCustomer() customer: CustomerPrincipal): Promise<StreamTicketResponse> {
    return this.tickets.issue(customer);
  }

  @Get()
  @CustomerOrTicketAuth()
  @ApiOperation({
    operationId: 'openStream',
    summary: 'Live telemetry and events of the devices you can see (Server-Sent Events)',
    description: [
      'Pushes, within about a second of the gateway’s upload being stored on any instance: every stored telemetry record (`event: telemetry`), every stored log line (`event: log`) and every event of the log (`event: alert.opened`, `device.offline`, …, with `id: evt_<n>`) of your devices; an administrator’s stream carries every device.',
      'Authenticate with `Authorization: Bearer` or, from EventSource, with `?ticket=` (POST /api/v1/dashboard/stream/tickets).',
      'Resume after a lost connection with `Last-Event-ID` (or `?lastEventId=`): the events recorded since are sent first. A device you release stops appearing at once.',
      'At most STREAM_MAX_PER_USER (default 10) streams per account and instance (429 past it). A client that stops reading is disconnected once more than 256 KiB have waited for it for a second. The service ends streams when it shuts down: reconnect.',
    ].join('\n\n'),
  })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this event id (EventSource sends it when it reconnects by itself).', schema: { type: 'string', example: 'evt_1042' } })
  @ApiProduces('text/event-stream')
  @ApiResponse({ status: 200, description: 'The stream, open until either side closes it.', content: { 'text/event-stream': { schema: STREAM_MESSAGE_SCHEMA } } })
  @ApiProblems({ 400: ['VALIDATION_FAILED'], 404: ['NOT_FOUND'], 429: ['TOO_MANY_STREAMS', 'RATE_LIMITED'] })
  @ApiCredentialCheckUnavailable()
  async open(
    @CurrentCustomer() customer: CustomerPrincipal,
    @Query() query: StreamQuery,
    @Headers('last-event-id') lastEventIdHeader: string | undefined,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const lastEventId = query.lastEventId ?? (lastEventIdHeader || undefined);
    const resumeAfter = lastEventId === undefined ? null : sequenceOf(lastEventId);
    if (lastEventId !== undefined && resumeAfter === null) {
      throw new ValidationFailedError([{ field: 'lastEventId', message: 'lastEventId (or Last-Event-ID) must be an event id such as evt_1042' }]);
    }
    const sink = new ResponseSink(reply);
    await this.streams.open({ userId: customer.userId, isAdmin: customer.isAdmin }, { deviceId: query.deviceId ?? null, resumeAfter }, sink);
    sink.start();
  }
}
