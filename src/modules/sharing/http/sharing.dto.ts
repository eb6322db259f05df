import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsIn, IsString, IsUUID, MaxLength, ValidateIf } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { PageQuery } from '../../../shared/http/page-query.js';
import { type DeviceShare, MAX_SHARES_PER_DEVICE, SHARE_ROLES, type ShareRole } from '../domain/device-share.js';

const trimmed = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

/** Exactly one of email and organizationId. */
export class CreateShareRequest {
  @ApiPropertyOptional({
    example: 'grace@example.com',
    maxLength: 254,
    format: 'email',
    description: 'Whom to share with. An address without an account gets the share once an account with it is verified. Give this or organizationId.',
  })
  @ValidateIf((request: CreateShareRequest) => request.email !== undefined || request.organizationId === undefined)
  @trimmed
  @IsString({ message: 'email or organizationId is required' })
  @MaxLength(254)
  @IsEmail({}, { message: 'email must be an e-mail address' })
  email?: string;

  @ApiPropertyOptional({
    format: 'uuid',
    example: '5b2f8c1e-3d4a-4e6b-9c7d-8e9f0a1b2c3d',
    description: "The organization to share with (an installer company gives you its id): every member sees the device, the organization's viewers as viewers. Give this or email.",
  })
  @Optional()
  @IsUUID('all', { message: 'organizationId must be an organization id' })
  organizationId?: string;

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

  @ApiProperty({ type: 'string', nullable: true, example: 'grace@example.com', description: 'Trimmed and lower-cased; null for a share with an organization.' })
  email!: string | null;

  @ApiProperty({ type: 'string', format: 'uuid', nullable: true, example: null, description: 'The organization shared with; null for a share with an address.' })
  organizationId!: string | null;

  @ApiProperty({ enum: SHARE_ROLES, example: 'viewer' })
  role!: ShareRole;

  @ApiProperty({ format: 'date-time', example: '2026-11-27T09:00:00.000Z' })
  createdAt!: string;

  static from(share: DeviceShare): ShareResponse {
    return { shareId: share.shareId, deviceId: share.deviceId, email: share.email, organizationId: share.organizationId, role: share.role, createdAt: share.createdAt.toISOString() };
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
