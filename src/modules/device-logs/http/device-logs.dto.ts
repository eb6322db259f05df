import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsString, MaxLength } from 'class-validator';
import { JsonSchemaBody } from '../../../shared/http/json-schema-body.js';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { PageQuery } from '../../../shared/http/page-query.js';
import { LOG_LEVELS, MAX_LINES_PER_BATCH, MAX_MESSAGE_BYTES, MAX_TAG_LENGTH, type LogLevel, type StoredLogLine } from '../domain/device-log.js';

/** What the upload route accepts, as the schema below has checked it. */
export interface LogBatchBody {
  lines: Array<{ ts: string; level: LogLevel; tag?: string; message: string }>;
}

/** The batch's rules as a compiled JSON schema (hundreds of lines a request); the classes below document the same rules. */
export const logBatchPipe = new JsonSchemaBody({
  type: 'object',
  additionalProperties: false,
  required: ['lines'],
  properties: {
    lines: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_LINES_PER_BATCH,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['ts', 'level', 'message'],
        properties: {
          ts: { type: 'string', maxLength: 40, format: 'iso-instant' },
          level: { enum: [...LOG_LEVELS] },
          tag: { type: 'string', minLength: 1, maxLength: MAX_TAG_LENGTH },
          message: { type: 'string', maxLength: MAX_MESSAGE_BYTES },
        },
      },
    },
  },
});

export class LogLineRequest {
  @ApiProperty({ format: 'date-time', maxLength: 40, example: '2026-11-21T12:00:00.125Z', description: 'When the gateway logged it (its clock).' })
  ts!: string;

  @ApiProperty({ enum: LOG_LEVELS })
  level!: LogLevel;

  @ApiPropertyOptional({ minLength: 1, maxLength: MAX_TAG_LENGTH, example: 'wifi', description: 'The component that logged it (ESP-IDF\'s tag).' })
  tag?: string;

  @ApiProperty({ maxLength: MAX_MESSAGE_BYTES, example: 'reconnected after 3 attempts', description: `At most ${MAX_MESSAGE_BYTES} bytes of UTF-8; a longer one refuses the batch (400), nothing is cut.` })
  message!: string;
}

export class LogBatchRequest {
  @ApiProperty({ type: [LogLineRequest], minItems: 1, maxItems: MAX_LINES_PER_BATCH })
  lines!: LogLineRequest[];
}

export class RejectedLineResponse {
  @ApiProperty({ description: 'Position of the line in the batch.', example: 3 })
  index!: number;

  @ApiProperty({ enum: ['TS_IN_FUTURE', 'TS_BEYOND_RETENTION'], example: 'TS_IN_FUTURE' })
  code!: string;
}

export class LogBatchResponse {
  @ApiProperty({ description: 'Lines stored by this request.', example: 50 })
  accepted!: number;

  @ApiProperty({ description: 'Lines stored already (a retried batch).', example: 0 })
  duplicates!: number;

  @ApiProperty({ type: [RejectedLineResponse], description: 'Lines refused on their own; the rest were stored.' })
  rejected!: RejectedLineResponse[];
}

export class LogsQuery extends PageQuery(500) {
  @ApiPropertyOptional({ format: 'date-time', description: 'From this instant (inclusive).' })
  @Optional()
  @IsISO8601({ strict: true, strictSeparator: true })
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Until this instant (exclusive).' })
  @Optional()
  @IsISO8601({ strict: true, strictSeparator: true })
  to?: string;

  @ApiPropertyOptional({ enum: LOG_LEVELS, description: 'This level and the more severe ones (`warn`: warnings and errors).' })
  @Optional()
  @IsIn(LOG_LEVELS)
  level?: LogLevel;

  @ApiPropertyOptional({ maxLength: 100, description: 'Lines whose message or tag contains this text (case-insensitive).' })
  @Optional()
  @IsString()
  @MaxLength(100)
  q?: string;
}

export class LogLineResponse {
  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.125Z' })
  ts!: string;

  @ApiProperty({ enum: LOG_LEVELS })
  level!: LogLevel;

  @ApiProperty({ type: 'string', nullable: true, example: 'wifi' })
  tag!: string | null;

  @ApiProperty({ example: 'reconnected after 3 attempts' })
  message!: string;

  static from(line: StoredLogLine): LogLineResponse {
    return { ts: line.ts.toISOString(), level: line.level, tag: line.tag, message: line.message };
  }
}

export class LogsResponse {
  @ApiProperty({ type: [LogLineResponse] })
  items!: LogLineResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Pass as `cursor` for the next (older) page; null on the last one.' })
  nextCursor!: string | null;
}
