import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PageQuery } from '../../../shared/http/page-query.js';
import { IsString, MaxLength } from 'class-validator';
import { OTA_EVENT_TYPES, type OtaEventType } from '../domain/ota-event.js';
import type { StoredOtaEvent } from '../domain/ota-event.store.js';
import { IsInstant } from '../../../shared/http/is-instant.decorator.js';
import { Optional } from '../../../shared/http/optional.decorator.js';

// A device's OTA history: its controller is the dashboard module's.

export class OtaHistoryQuery extends PageQuery(200) {
  @ApiPropertyOptional({ format: 'date-time', description: 'Inclusive.' })
  @Optional()
  @IsString()
  @MaxLength(40)
  @IsInstant()
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Exclusive.' })
  @Optional()
  @IsString()
  @MaxLength(40)
  @IsInstant()
  to?: string;

  @ApiPropertyOptional({ description: `Comma-separated event types (${OTA_EVENT_TYPES.join(', ')}).`, example: 'install_failed,rolled_back' })
  @Optional()
  @IsString()
  @MaxLength(400)
  type?: string;

}

export class OtaHistoryItemResponse {
  @ApiProperty({ example: '42' })
  id!: string;

  @ApiProperty({ format: 'date-time', description: 'Gateway time of the event.', example: '2026-11-21T12:00:00.000Z' })
  ts!: string;

  @ApiProperty({ format: 'date-time', description: 'When the service received it.', example: '2026-11-21T12:00:02.000Z' })
  receivedAt!: string;

  @ApiProperty({ enum: OTA_EVENT_TYPES })
  type!: OtaEventType;

  @ApiProperty({ type: 'string', nullable: true, example: '0.1.9' })
  fromVersion!: string | null;

  @ApiProperty({ type: 'string', nullable: true, example: '0.1.10' })
  toVersion!: string | null;

  @ApiProperty({ type: 'integer', nullable: true, example: 40 })
  progressPct!: number | null;

  @ApiProperty({ type: 'string', nullable: true, example: 'E_SHA_MISMATCH' })
  errorCode!: string | null;

  @ApiProperty({ type: 'string', nullable: true, example: 'SHA-256 of the downloaded image does not match the release' })
  message!: string | null;

  static from(event: StoredOtaEvent): OtaHistoryItemResponse {
    return {
      id: event.id,
      ts: event.ts.toISOString(),
      receivedAt: event.receivedAt.toISOString(),
      type: event.type,
      fromVersion: event.fromVersion,
      toVersion: event.toVersion,
      progressPct: event.progressPct,
      errorCode: event.errorCode,
      message: event.message,
    };
  }
}

export class OtaHistoryResponse {
  @ApiProperty({ type: [OtaHistoryItemResponse], description: 'Newest first.' })
  items!: OtaHistoryItemResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for older events; null on the last page.', example: 'MjAyNi0xMS0yMVQxMjowMDowMC4wMDBafDQy' })
  nextCursor!: string | null;
}
