import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsObject, IsString, Max, MaxLength, Min } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { PageQuery } from '../../../shared/http/page-query.js';
import { QueryInt } from '../../../shared/http/query-int.decorator.js';
import {
  COMMAND_STATES,
  COMMAND_TYPES,
  LOG_LEVELS,
  MAX_COLLECT_LOGS_SINCE_SEC,
  MAX_CUSTOM_PAYLOAD_BYTES,
  MAX_OUTPUT_BYTES,
  MAX_TTL_SEC,
  RESULT_STATUSES,
  type CommandState,
  type CommandType,
  type DeviceCommand,
  type PendingCommand,
  type ResultStatus,
} from '../domain/device-command.js';

const PARAMS_DESCRIPTION = [
  'What the type takes, and nothing else (an unknown key is a 400):',
  '`reboot`, `ping`, `upload-now`: none;',
  `\`set-log-level\`: \`{level}\`, one of ${LOG_LEVELS.join(', ')};`,
  `\`collect-logs\`: \`{sinceSec}\`, 1–${MAX_COLLECT_LOGS_SINCE_SEC};`,
  `\`custom\`: \`{name, payload?}\`, name 1–64 of A–Z a–z 0–9 . _ -, payload any JSON of at most ${MAX_CUSTOM_PAYLOAD_BYTES} bytes.`,
].join(' ');

export class SendCommandRequest {
  @ApiProperty({ enum: COMMAND_TYPES, example: 'reboot' })
  @IsIn(COMMAND_TYPES)
  type!: CommandType;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: PARAMS_DESCRIPTION, example: {} })
  @Optional()
  @IsObject()
  params?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_TTL_SEC, default: 3600, description: 'How long the command may wait for its gateway: still queued or unanswered then, it expires.' })
  @Optional()
  @IsInt()
  @Min(1)
  @Max(MAX_TTL_SEC)
  ttlSec?: number;
}

export class CommandResponse {
  @ApiProperty({ example: 'cmd_42', description: 'Unique, increasing in the order commands were sent.' })
  commandId!: string;

  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ enum: COMMAND_TYPES })
  type!: CommandType;

  @ApiProperty({ type: 'object', additionalProperties: true, example: {} })
  params!: Record<string, unknown>;

  @ApiProperty({ enum: COMMAND_STATES, description: 'queued → delivered → succeeded | failed | rejected; queued or delivered → expired; queued → cancelled.' })
  state!: CommandState;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T13:00:00.000Z', description: 'Still queued or delivered at this instant, the command expires.' })
  expiresAt!: string;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-21T12:00:01.000Z', description: 'When a poll first handed it to the gateway.' })
  deliveredAt!: string | null;

  @ApiProperty({ type: 'integer', example: 1, description: 'Poll answers that carried it: more than one when the gateway missed an answer (delivery is at least once).' })
  deliveries!: number;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-21T12:00:01.500Z', description: 'When the gateway reported `accepted`.' })
  acceptedAt!: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-21T12:00:09.000Z' })
  finishedAt!: string | null;

  @ApiProperty({ type: 'string', nullable: true, example: 'rebooted in 8 s', description: 'What the gateway reported with its result.' })
  output!: string | null;

  static from(command: DeviceCommand): CommandResponse {
    return {
      commandId: command.commandId,
      deviceId: command.deviceId,
      type: command.type,
      params: command.params,
      state: command.state,
      createdAt: command.createdAt.toISOString(),
      expiresAt: command.expiresAt.toISOString(),
      deliveredAt: command.deliveredAt?.toISOString() ?? null,
      deliveries: command.deliveries,
      acceptedAt: command.acceptedAt?.toISOString() ?? null,
      finishedAt: command.finishedAt?.toISOString() ?? null,
      output: command.output,
    };
  }
}

export class CommandsQuery extends PageQuery(100) {}

export class CommandsResponse {
  @ApiProperty({ type: [CommandResponse] })
  items!: CommandResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Pass as `cursor` for the next (older) page; null on the last one.' })
  nextCursor!: string | null;
}

export class PendingCommandResponse {
  @ApiProperty({ example: 'cmd_42', description: 'The same on every delivery: a gateway that has run it already drops the repeat.' })
  commandId!: string;

  @ApiProperty({ enum: COMMAND_TYPES })
  type!: CommandType;

  @ApiProperty({ type: 'object', additionalProperties: true, example: {} })
  params!: Record<string, unknown>;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T13:00:00.000Z' })
  expiresAt!: string;

  static from(command: PendingCommand): PendingCommandResponse {
    return { commandId: command.commandId, type: command.type, params: command.params, createdAt: command.createdAt.toISOString(), expiresAt: command.expiresAt.toISOString() };
  }
}

export class DeviceCommandsResponse {
  @ApiProperty({ type: [PendingCommandResponse], description: 'Oldest first; empty when nothing waits.' })
  commands!: PendingCommandResponse[];
}

export class DeviceCommandsQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 30, description: 'Hold the request up to this many seconds until a command arrives (long poll). Without it the answer is immediate.' })
  @Optional()
  @QueryInt()
  @IsInt()
  @Min(1)
  @Max(30)
  waitSec?: number;
}

export class CommandResultRequest {
  @ApiProperty({ enum: RESULT_STATUSES, description: '`accepted`: started, a final result follows; `succeeded`, `failed`, `rejected` (will not run it): final.' })
  @IsIn(RESULT_STATUSES)
  status!: ResultStatus;

  @ApiPropertyOptional({ maxLength: MAX_OUTPUT_BYTES, example: 'rebooted in 8 s', description: `What to show the operator: at most ${MAX_OUTPUT_BYTES} bytes of UTF-8.` })
  @Optional()
  @IsString()
  @MaxLength(MAX_OUTPUT_BYTES)
  output?: string;
}

export class CommandResultResponse {
  @ApiProperty({ example: 'cmd_42' })
  commandId!: string;

  @ApiProperty({ enum: COMMAND_STATES })
  state!: CommandState;

  static from(command: DeviceCommand): CommandResultResponse {
    return { commandId: command.commandId, state: command.state };
  }
}
