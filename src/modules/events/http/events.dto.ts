import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, Matches, MaxLength } from 'class-validator';
import { PageQuery } from '../../../shared/http/page-query.js';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { DEVICE_EVENT_TYPES, type DeviceEvent, type DeviceEventType } from '../domain/device-event.js';

export class EventsQuery extends PageQuery(200) {
  @ApiPropertyOptional({ example: 'gw-0001', description: 'Only this device’s events.' })
  @Optional()
  @IsString()
  @Matches(DEVICE_ID_PATTERN, { message: 'deviceId must be 1–64 of A–Z a–z 0–9 . _ : -' })
  deviceId?: string;

  @ApiPropertyOptional({ description: `Comma-separated event types (${DEVICE_EVENT_TYPES.join(', ')}).`, example: 'alert.opened,device.offline' })
  @Optional()
  @IsString()
  @MaxLength(400)
  type?: string;
}

export class DeviceEventResponse {
  @ApiProperty({ example: 'evt_1042', description: 'Unique and stable: the same on every redelivery (webhooks, stream).' })
  id!: string;

  @ApiProperty({ enum: DEVICE_EVENT_TYPES })
  type!: DeviceEventType;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  occurredAt!: string;

  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Depends on the type; see the webhooks section of this document.', example: { ownerId: '7d9f2c1e-4b6a-4e0f-8a3d-2c5b9e1f6a70' } })
  data!: Record<string, unknown>;

  static from(event: DeviceEvent): DeviceEventResponse {
    return { id: event.id, type: event.type, occurredAt: event.occurredAt.toISOString(), deviceId: event.deviceId, data: event.data };
  }
}

export class EventsResponse {
  @ApiProperty({ type: [DeviceEventResponse] })
  items!: DeviceEventResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Pass as `cursor` for the next (older) page; null on the last one.' })
  nextCursor!: string | null;
}
