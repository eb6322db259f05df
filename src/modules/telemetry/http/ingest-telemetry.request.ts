import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsOptional, IsString, Matches, MaxLength, ValidateNested, registerDecorator } from 'class-validator';
import { BATTERY_ID_PATTERN, MAX_METRICS_PER_RECORD, metricsProblems, parseIsoInstant } from '../domain/telemetry-record.js';

export function IsInstant(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isInstant',
      target: target.constructor,
      propertyName: String(propertyName),
      validator: {
        validate: (value: unknown) => typeof value === 'string' && parseIsoInstant(value) !== null,
        defaultMessage: () => 'ts must be a real ISO 8601 date-time with a time zone, e.g. 2026-11-21T12:00:00Z',
      },
    });
}

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
  @MaxLength(40)
  @IsInstant()
  ts!: string;

  @ApiPropertyOptional({ description: 'Which battery or sensor on the gateway (1–64 of A–Z a–z 0–9 . _ : -); "main" when absent.', example: 'pack-1', pattern: BATTERY_ID_PATTERN.source, minLength: 1, maxLength: 64 })
  @IsOptional()
  @IsString()
  @Matches(BATTERY_ID_PATTERN, { message: 'batteryId must be 1–64 characters of A–Z a–z 0–9 . _ : -' })
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
