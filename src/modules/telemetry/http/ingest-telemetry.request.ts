import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { JsonSchemaBody } from '../../../shared/http/json-schema-body.js';
import { BATTERY_ID_PATTERN, MAX_METRICS_PER_RECORD, METRIC_NAME } from '../domain/telemetry-record.js';

export const MAX_RECORDS_PER_BATCH = 500;

/** What the ingest route accepts, as the schema below has checked it. */
export interface IngestBody {
  records: Array<{ ts: string; batteryId?: string; metrics: Record<string, number> }>;
}

/**
 * The ingest body's rules as a compiled JSON schema: up to 500 records × 64 metrics arrive per
 * request, and walking them with class-validator cost more CPU than storing them. The classes
 * below document the same rules in the OpenAPI document.
 */
export const INGEST_BODY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['records'],
  properties: {
    records: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_RECORDS_PER_BATCH,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['ts', 'metrics'],
        properties: {
          ts: { type: 'string', maxLength: 40, format: 'iso-instant' },
          batteryId: { type: 'string', pattern: BATTERY_ID_PATTERN.source },
          metrics: {
            type: 'object',
            minProperties: 1,
            maxProperties: MAX_METRICS_PER_RECORD,
            propertyNames: { pattern: METRIC_NAME.source },
            // Non-finite values pass here and are rejected per record (VALUE_OUT_OF_RANGE) by admit.
            additionalProperties: { anyNumber: true },
          },
        },
      },
    },
  },
};

/** A problem inside a record's metrics names the metrics field, as class-validator did before. */
export const ingestBodyPipe = new JsonSchemaBody(INGEST_BODY_SCHEMA, (path) => (path.length > 3 && path[2] === 'metrics' ? path.slice(0, 3) : path));

export class TelemetryRecordRequest {
  @ApiProperty({ description: 'When the gateway measured it (ISO 8601 with zone; the gateway clock).', example: '2026-11-21T12:00:00Z', format: 'date-time', maxLength: 40 })
  ts!: string;

  @ApiPropertyOptional({ description: 'Which battery or sensor on the gateway (1–64 of A–Z a–z 0–9 . _ : -); "main" when absent.', example: 'pack-1', pattern: BATTERY_ID_PATTERN.source, minLength: 1, maxLength: 64 })
  batteryId?: string;

  @ApiProperty({
    description:
      '1–64 numbers. Each must be 0 or have a magnitude from 1e-12 to 1e12; a record with a value outside (or not finite, e.g. 1e999) is rejected on its own as VALUE_OUT_OF_RANGE. Well-known: voltage (V), current (A, negative = discharge), power (W), soc (%), soh (%), temperature (°C), cellVoltageMin/cellVoltageMax (V), cycleCount, rssi (dBm), uptime (s), freeHeap (bytes).',
    type: 'object',
    additionalProperties: { type: 'number' },
    example: { voltage: 52.1, current: -3.4, soc: 81.5, temperature: 24.2 },
  })
  metrics!: Record<string, number>;
}

export class IngestTelemetryRequest {
  @ApiProperty({ type: [TelemetryRecordRequest], minItems: 1, maxItems: MAX_RECORDS_PER_BATCH })
  records!: TelemetryRecordRequest[];
}

export class RejectedRecordResponse {
  @ApiProperty({ description: 'Position of the record in the batch.', example: 3 })
  index!: number;

  @ApiProperty({
    enum: ['TS_IN_FUTURE', 'TS_BEYOND_RETENTION', 'VALUE_OUT_OF_RANGE', 'CONFLICTS_WITH_STORED'],
    example: 'TS_IN_FUTURE',
    description: 'CONFLICTS_WITH_STORED: a record of this battery at this time is stored with other metrics (a clock or sequence bug of the gateway); the stored one stays. A retry with the same metrics counts as a duplicate instead.',
  })
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
