import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsOptional, IsString, Length, Matches, ValidateNested, registerDecorator } from 'class-validator';
import { MAX_METRICS_PER_RECORD, metricsProblems } from '../domain/telemetry-record.js';

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$/;

function IsMetrics(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isMetrics',
      target: target.constructor,
      propertyName: String(propertyName),
      validator: {
        validate: (value: unknown) => metricsProblems(value, 'metrics').length === 0,
        defaultMessage: () => `metrics must hold 1–${MAX_METRICS_PER_RECORD} finite numbers named like ^[a-z][a-zA-Z0-9_]{0,39}$`,
      },
    });
}

export class TelemetryRecordRequest {
  @ApiProperty({ description: 'When the gateway measured it (ISO 8601 with zone; the gateway clock).', example: '2026-11-21T12:00:00Z', format: 'date-time' })
  @IsString()
  @Matches(ISO_DATE_TIME, { message: 'ts must be an ISO 8601 date-time with a time zone' })
  ts!: string;

  @ApiPropertyOptional({ description: 'Which battery or sensor on the gateway.', default: 'main', example: 'pack-1', minLength: 1, maxLength: 64 })
  @IsOptional()
  @IsString()
  @Length(1, 64)
  batteryId?: string;

  @ApiProperty({
    description: '1–64 finite numbers. Well-known: voltage (V), current (A, negative = discharge), power (W), soc (%), soh (%), temperature (°C), cellVoltageMin/cellVoltageMax (V), cycleCount, rssi (dBm), uptime (s), freeHeap (bytes).',
    type: 'object',
    additionalProperties: { type: 'number' },
    example: { voltage: 52.1, current: -3.4, soc: 81.5, temperature: 24.2 },
  })
  @IsMetrics()
  metrics!: Record<string, number>;
}

export class IngestTelemetryRequest {
  @ApiProperty({ type: [TelemetryRecordRequest], minItems: 1, maxItems: 500 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(500)
  @ValidateNested({ each: true })
  @Type(() => TelemetryRecordRequest)
  records!: TelemetryRecordRequest[];
}

export class RejectedRecordResponse {
  @ApiProperty({ description: 'Position of the record in the batch.', example: 3 })
  index!: number;

  @ApiProperty({ enum: ['TS_IN_FUTURE', 'TS_BEYOND_RETENTION'], example: 'TS_IN_FUTURE' })
  code!: string;
}

export class IngestTelemetryResponse {
  @ApiProperty({ description: 'Records stored by this request.', example: 49 })
  accepted!: number;

  @ApiProperty({ description: 'Records already stored (a retried batch); the first stored value wins.', example: 0 })
  duplicates!: number;

  @ApiProperty({ type: [RejectedRecordResponse], description: 'Records refused on their own; the rest were stored.' })
  rejected!: RejectedRecordResponse[];
}
