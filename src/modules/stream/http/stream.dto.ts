import { ApiHideProperty, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger';
import { IsString, Matches, MaxLength } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { DEVICE_EVENT_TYPES } from '../../events/index.js';

export class StreamQuery {
  /** Documented as the streamTicket security scheme; read by the auth guard. */
  @ApiHideProperty()
  @Optional()
  @IsString()
  @MaxLength(100)
  ticket?: string;

  @ApiPropertyOptional({ example: 'gw-0001', description: 'Only this device (one you can see; else 404).' })
  @Optional()
  @IsString()
  @Matches(DEVICE_ID_PATTERN, { message: 'deviceId must be 1–64 of A–Z a–z 0–9 . _ : -' })
  deviceId?: string;

  @ApiPropertyOptional({
    example: 'evt_1042',
    description: 'Resume: the events of the log recorded after this id are sent first (at most 1,000), then live ones. Same as the Last-Event-ID header, which EventSource sends itself; this one wins when both come.',
  })
  @Optional()
  @IsString()
  @MaxLength(30)
  lastEventId?: string;
}

export class StreamTicketResponse {
  @ApiProperty({ example: 'st_q3Jk8mZ0c1xQ9vA4bT7nW2eR5yU6iO8pL0kJ3hG1fD2', description: 'Opens one stream: GET /api/v1/dashboard/stream?ticket=…. Single use.' })
  ticket!: string;

  @ApiProperty({ example: 60, description: 'Seconds the ticket stays valid.' })
  expiresIn!: number;
}

export class StreamTelemetry {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ example: 'main' })
  batteryId!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-25T12:00:00.000Z' })
  ts!: string;

  @ApiProperty({ type: 'object', additionalProperties: { type: 'number' }, example: { soc: 81.5, voltage: 13.2, temperature: 24.5 } })
  metrics!: Record<string, number>;
}

export class StreamLogLine {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-25T12:00:00.125Z' })
  ts!: string;

  @ApiProperty({ enum: ['error', 'warn', 'info', 'debug', 'verbose'] })
  level!: string;

  @ApiProperty({ type: 'string', nullable: true, example: 'wifi' })
  tag!: string | null;

  @ApiProperty({ example: 'reconnected after 3 attempts' })
  message!: string;
}

/** The body of GET /dashboard/stream: SSE messages, each one of these (OpenAPI 3.1 has no SSE schema of its own). */
export const STREAM_MESSAGE_SCHEMA: SchemaObject = {
  description: 'Server-Sent Events. Each message is one of the objects below (`event`, `id` and `data` are the SSE fields; `data` is JSON). Comment lines (`: heartbeat`) come every 15 s.',
  oneOf: [
    {
      type: 'object',
      title: 'TelemetryMessage',
      description: 'A record a gateway sent, once stored: for every record of a device you can see. No id: records are not replayed on resume.',
      properties: { event: { type: 'string', enum: ['telemetry'] }, data: { $ref: '#/components/schemas/StreamTelemetry' } },
      required: ['event', 'data'],
    },
    {
      type: 'object',
      title: 'LogMessage',
      description: 'A log line a gateway uploaded, once stored (POST /api/v1/device/logs; a retried line is not sent again). No id: lines are not replayed on resume.',
      properties: { event: { type: 'string', enum: ['log'] }, data: { $ref: '#/components/schemas/StreamLogLine' } },
      required: ['event', 'data'],
    },
    {
      type: 'object',
      title: 'EventMessage',
      description: 'An event of the log (GET /api/v1/dashboard/events), named by its type, with the log’s id as the SSE id: resume with Last-Event-ID.',
      properties: {
        id: { type: 'string', example: 'evt_1042' },
        event: { type: 'string', enum: [...DEVICE_EVENT_TYPES] },
        data: { $ref: '#/components/schemas/DeviceEventResponse' },
      },
      required: ['id', 'event', 'data'],
    },
  ],
};
