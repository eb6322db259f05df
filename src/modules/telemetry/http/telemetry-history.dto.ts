import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator.js';
import type { History } from '../application/telemetry-history.service.js';
import { pointsOf } from '../domain/history-series.js';
import { QueryInt } from '../../../shared/http/query-int.decorator.js';

export class TelemetryHistoryQuery {
  @ApiPropertyOptional({ type: 'string', format: 'date-time', description: 'Inclusive start, ISO 8601 with zone. Default: 24 h before `to`.', example: '2026-11-20T12:00:00Z' })
  @Optional()
  @IsString()
  @MaxLength(40)
  from?: string;

  @ApiPropertyOptional({ type: 'string', format: 'date-time', description: 'Exclusive end, ISO 8601 with zone. Default: now. At most 366 days after `from`.', example: '2026-11-21T12:00:00Z' })
  @Optional()
  @IsString()
  @MaxLength(40)
  to?: string;

  @ApiPropertyOptional({ description: 'Comma-separated metric names. Default: every metric reported in the range.', example: 'voltage,soc' })
  @Optional()
  @IsString()
  @MaxLength(2700)
  metrics?: string;

  @ApiPropertyOptional({ description: 'Only this battery. Default: all.', example: 'main' })
  @Optional()
  @IsString()
  @MaxLength(64)
  batteryId?: string;

  @ApiPropertyOptional({
    description: 'Seconds per bucket (≥ 1), `auto` (smallest of 60, 300, 900, 3600, 21600, 86400 s keeping ≤ 500 points per series) or `raw` (the records, paginated).',
    anyOf: [
      { type: 'string', enum: ['auto', 'raw'] },
      { type: 'string', pattern: '^0*[1-9][0-9]*$', maxLength: 9, description: 'Seconds per bucket.' },
    ],
    example: 'auto',
    default: 'auto',
  })
  @Optional()
  @IsString()
  @MaxLength(12)
  bucket?: string;

  @ApiPropertyOptional({ type: 'integer', description: 'Raw mode: records per page.', minimum: 1, maximum: 1000, default: 1000 })
  @Optional()
  @QueryInt()
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;

  @ApiPropertyOptional({ type: 'string', maxLength: 200, description: 'Raw mode only: nextCursor of the previous page. With any other bucket (whose answers have no pages), or a value this service did not return, a 400 naming `cursor`.' })
  @Optional()
  @IsString()
  @MaxLength(200)
  cursor?: string;
}

export class TelemetryExportQuery {
  @ApiPropertyOptional({ type: 'string', format: 'date-time', description: 'Inclusive start, ISO 8601 with zone. Default: 24 h before `to`.', example: '2026-11-20T12:00:00Z' })
  @Optional()
  @IsString()
  @MaxLength(40)
  from?: string;

  @ApiPropertyOptional({ type: 'string', format: 'date-time', description: 'Exclusive end, ISO 8601 with zone. Default: now. At most 366 days after `from` (the default retention is 365 days).', example: '2026-11-21T12:00:00Z' })
  @Optional()
  @IsString()
  @MaxLength(40)
  to?: string;

  @ApiPropertyOptional({ description: 'Only this battery. Default: all.', example: 'main' })
  @Optional()
  @IsString()
  @MaxLength(64)
  batteryId?: string;

  @ApiPropertyOptional({ enum: ['csv'], default: 'csv', description: 'The one format there is.' })
  @Optional()
  @IsIn(['csv'])
  format?: 'csv';
}

export class SeriesPointResponse {
  @ApiProperty({ format: 'date-time', description: 'Start of the bucket (buckets are aligned to the Unix epoch).', example: '2026-11-21T12:00:00.000Z' })
  ts!: string;

  @ApiProperty({ example: 52.1 }) avg!: number;
  @ApiProperty({ example: 51.8 }) min!: number;
  @ApiProperty({ example: 52.4 }) max!: number;
  @ApiProperty({ description: 'Records in the bucket.', example: 5 }) count!: number;
}

export class SeriesResponse {
  @ApiProperty({ example: 'voltage' })
  metric!: string;

  @ApiProperty({ example: 'main' })
  batteryId!: string;

  @ApiProperty({ type: [SeriesPointResponse], description: 'Ascending by ts; empty buckets are omitted.' })
  points!: SeriesPointResponse[];
}

export class RawRecordResponse {
  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  ts!: string;

  @ApiProperty({ example: 'main' })
  batteryId!: string;

  @ApiProperty({ type: 'object', additionalProperties: { type: 'number' }, example: { voltage: 52.1 } })
  metrics!: Record<string, number>;
}

export class TelemetryHistoryResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-20T12:00:00.000Z' })
  from!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  to!: string;

  @ApiProperty({ type: 'integer', nullable: true, description: 'Seconds per bucket; null in raw mode.', example: 300 })
  bucketSec!: number | null;

  @ApiProperty({ type: [SeriesResponse], description: 'One series per (metric, batteryId); empty in raw mode.' })
  series!: SeriesResponse[];

  @ApiPropertyOptional({ type: [RawRecordResponse], description: 'Raw mode only: the records, ascending by ts.' })
  records?: RawRecordResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Raw mode: pass as `cursor` for the next page. Null when there is no more.', example: 'MjAyNi0xMS0yMVQxMjowMDowMC4wMDBafG1haW4' })
  nextCursor!: string | null;

  static from(history: History): TelemetryHistoryResponse {
    const base = { deviceId: history.deviceId, from: history.from.toISOString(), to: history.to.toISOString() };
    if (history.kind === 'raw') {
      return {
        ...base,
        bucketSec: null,
        series: [],
        records: history.records.map((record) => ({ ts: record.ts.toISOString(), batteryId: record.battery_id, metrics: record.metrics })),
        nextCursor: history.nextCursor,
      };
    }
    return {
      ...base,
      bucketSec: history.bucketSec,
      series: history.series.map((series) => ({ metric: series.metric, batteryId: series.batteryId, points: pointsOf(series) })),
      nextCursor: null,
    };
  }
}
