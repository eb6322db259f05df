import { ApiProperty } from '@nestjs/swagger';
import type { Device } from '../../devices/index.js';
import type { Ownership } from '../application/claims.service.js';

export class ClaimResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ format: 'uuid', example: '3f0b6a8e-2a52-4f7e-9a35-8c0d7c5e1b2a', description: 'The organization that owns the device: your personal organization has your account\'s id.' })
  ownerId!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T16:00:00.000Z', description: 'When this owner claimed it; unchanged by repeated claims.' })
  claimedAt!: string;

  static from(ownership: Ownership): ClaimResponse {
    return { deviceId: ownership.deviceId, ownerId: ownership.ownerId, claimedAt: ownership.claimedAt.toISOString() };
  }
}

export class OwnedDeviceResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ example: 'esp32s3-7c:df:a1:0b:22:c4' })
  hardwareId!: string;

  @ApiProperty({ example: '0.1.4' })
  firmwareVersion!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T16:00:00.000Z' })
  claimedAt!: string;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-21T16:05:00.000Z' })
  lastSeenAt!: string | null;

  static from(device: Device): OwnedDeviceResponse {
    return {
      deviceId: device.deviceId,
      hardwareId: device.hardwareId,
      firmwareVersion: device.firmwareVersion.value,
      claimedAt: (device.claimedAt ?? device.registeredAt).toISOString(),
      lastSeenAt: device.lastSeenAt?.toISOString() ?? null,
    };
  }
}

export class OwnedDeviceListResponse {
  @ApiProperty({ type: [OwnedDeviceResponse] })
  items!: OwnedDeviceResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.', example: 'MjAyNi0xMS0yMVQxNjowMDowMC4wMDBafGd3LTAwMDE' })
  nextCursor!: string | null;
}

export class ReRegistrationResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-22T16:00:00.000Z', description: 'The device may register again with the same deviceId and hardwareId until then.' })
  openUntil!: string;
}

export class DecommissionResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T16:00:00.000Z', description: 'When it was decommissioned; the same when asked again.' })
  decommissionedAt!: string;
}

export class ReopenResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: '2026-11-21T17:00:00.000Z',
    description: 'Until then the gateway may register again with the same deviceId and hardwareId; null when the device was not decommissioned (nothing changed).',
  })
  openUntil!: string | null;
}
