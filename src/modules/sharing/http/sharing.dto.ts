import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsIn, IsString, MaxLength } from 'class-validator';
import { PageQuery } from '../../../shared/http/page-query.js';
import { type DeviceShare, MAX_SHARES_PER_DEVICE, SHARE_ROLES, type ShareRole } from '../domain/device-share.js';

const trimmed = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

export class CreateShareRequest {
  @ApiProperty({ example: 'grace@example.com', maxLength: 254, format: 'email', description: 'Whom to share with. An address without an account gets the share once an account with it is verified.' })
  @trimmed
  @IsString()
  @MaxLength(254)
  @IsEmail({}, { message: 'email must be an e-mail address' })
  email!: string;

  @ApiProperty({
    enum: SHARE_ROLES,
    example: 'viewer',
    description: '`viewer`: sees the device as you do (list, detail, history, OTA history, configuration, events, alerts, alert rules, the stream). `installer`: also changes its configuration, alert rules, name and tags, and acknowledges its alerts.',
  })
  @IsIn(SHARE_ROLES, { message: `role must be one of ${SHARE_ROLES.join(', ')}` })
  role!: ShareRole;
}

export class ShareResponse {
  @ApiProperty({ format: 'uuid', example: '0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5' })
  shareId!: string;

  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ example: 'grace@example.com', description: 'Trimmed and lower-cased.' })
  email!: string;

  @ApiProperty({ enum: SHARE_ROLES, example: 'viewer' })
  role!: ShareRole;

  @ApiProperty({ format: 'date-time', example: '2026-11-27T09:00:00.000Z' })
  createdAt!: string;

  static from(share: DeviceShare): ShareResponse {
    return { shareId: share.shareId, deviceId: share.deviceId, email: share.email, role: share.role, createdAt: share.createdAt.toISOString() };
  }
}

/** limit (1–50) and cursor, as every list; a device has at most 50 shares, so one page of the default size holds them all. */
export class ShareListQuery extends PageQuery(MAX_SHARES_PER_DEVICE) {}

export class ShareListResponse {
  @ApiProperty({ type: [ShareResponse], description: 'Shares of the device, oldest first.' })
  items!: ShareResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.', example: null })
  nextCursor!: string | null;
}
