import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsString, IsUUID, Length, Matches, MaxLength, ValidateIf } from 'class-validator';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { PageQuery } from '../../../shared/http/page-query.js';

export class ClaimDeviceRequest {
  @ApiProperty({ example: 'gw-0001', pattern: DEVICE_ID_PATTERN.source, minLength: 1, maxLength: 64 })
  @IsString()
  @Length(1, 64)
  @Matches(DEVICE_ID_PATTERN, { message: 'deviceId must be 1–64 characters of A–Z a–z 0–9 . _ : -' })
  deviceId!: string;

  @ApiPropertyOptional({ description: 'The code from the gateway label (case-insensitive). Required unless the device predates claim codes.', example: 'QUICK-AMBER-FALCON', minLength: 1, maxLength: 64 })
  @ValidateIf((request: ClaimDeviceRequest) => request.claimCode !== undefined || request.deviceSecret === undefined)
  @IsString({ message: 'claimCode or deviceSecret is required' })
  @Length(1, 64)
  claimCode?: string;

  @ApiPropertyOptional({ description: 'Legacy mode only: the device secret of a device registered without a claim code.', example: 'q7w4Yx0bW7b0R2mCw0w5m1cN1x6f3j8Hh2kP9sT4uVw', minLength: 1, maxLength: 128 })
  @Optional()
  @IsString()
  @Length(1, 128)
  deviceSecret?: string;

  @ApiPropertyOptional({
    format: 'uuid',
    description: 'The organization to claim the device into, one you are an owner, admin or operator of (GET /api/v1/organizations). Left out: your personal organization.',
    example: '5b2f8c1e-3d4a-4e6b-9c7d-8e9f0a1b2c3d',
  })
  @Optional()
  @IsUUID('all', { message: 'organizationId must be an organization id' })
  organizationId?: string;
}

/** limit (1–100) and cursor, as every list. */
export class OwnedDevicesQuery extends PageQuery(100) {}

/** Exactly one of toEmail and toOrganizationId. */
export class TransferDeviceRequest {
  @ApiPropertyOptional({ example: 'ada@example.com', maxLength: 254, format: 'email', description: 'The e-mail address of the verified account whose personal organization is to own the device. Give this or toOrganizationId.' })
  @ValidateIf((request: TransferDeviceRequest) => request.toEmail !== undefined || request.toOrganizationId === undefined)
  @IsString({ message: 'toEmail or toOrganizationId is required' })
  @MaxLength(254)
  @IsEmail({}, { message: 'toEmail must be an e-mail address' })
  toEmail?: string;

  @ApiPropertyOptional({ format: 'uuid', example: '5b2f8c1e-3d4a-4e6b-9c7d-8e9f0a1b2c3d', description: 'The organization that is to own the device. Give this or toEmail.' })
  @ValidateIf((request: TransferDeviceRequest) => request.toOrganizationId !== undefined || request.toEmail === undefined)
  @IsUUID('all', { message: 'toOrganizationId must be an organization id' })
  toOrganizationId?: string;
}
