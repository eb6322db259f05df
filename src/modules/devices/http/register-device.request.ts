import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, Length, Matches, MaxLength } from 'class-validator';
import { ClaimCode } from '../domain/claim-code.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import { Optional } from '../../../shared/http/optional.decorator.js';

export { DEVICE_ID_PATTERN };

export class RegisterDeviceRequest {
  @ApiProperty({ description: 'Stable gateway identifier: 1–64 of A–Z a–z 0–9 . _ : -', example: 'gw-0001', pattern: DEVICE_ID_PATTERN.source, minLength: 1, maxLength: 64 })
  @IsString()
  @Length(1, 64)
  @Matches(DEVICE_ID_PATTERN, { message: 'deviceId must be 1–64 characters of A–Z a–z 0–9 . _ : -' })
  deviceId!: string;

  @ApiProperty({ description: 'Board or chip identity.', example: 'esp32s3-7c:df:a1:0b:22:c4', minLength: 1, maxLength: 128 })
  @IsString()
  @Length(1, 128)
  hardwareId!: string;

  @ApiProperty({ description: 'Dotted numeric version, 2–4 parts, compared numerically.', example: '0.1.4', pattern: FirmwareVersion.PATTERN.source, maxLength: 64 })
  @IsString()
  @MaxLength(64)
  @Matches(FirmwareVersion.PATTERN, { message: 'firmwareVersion must be a dotted numeric version such as 0.1.4' })
  firmwareVersion!: string;

  @ApiPropertyOptional({
    description: 'Required from firmware 0.1.4. Letters in two or more hyphen-joined groups, 8+ letters; case-insensitive. Stored only as an argon2id hash.',
    example: 'QUICK-AMBER-FALCON',
    pattern: ClaimCode.PATTERN.source,
    maxLength: ClaimCode.MAX_LENGTH,
  })
  @Optional()
  @IsString()
  @MaxLength(ClaimCode.MAX_LENGTH)
  @Matches(ClaimCode.PATTERN, { message: 'claimCode must be letters in two or more groups joined by single hyphens' })
  claimCode?: string;
}
