import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsObject, IsString, Length, Matches, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { DEVICE_ID_PATTERN } from './register-device.request.js';

export class AllowlistEntryRequest {
  @ApiProperty({ example: 'gw-0001', pattern: DEVICE_ID_PATTERN.source, minLength: 1, maxLength: 64 })
  @IsString()
  @Length(1, 64)
  @Matches(DEVICE_ID_PATTERN, { message: 'deviceId must be 1–64 characters of A–Z a–z 0–9 . _ : -' })
  deviceId!: string;

  @ApiProperty({ example: 'esp32s3-7c:df:a1:0b:22:c4', minLength: 1, maxLength: 128 })
  @IsString()
  @Length(1, 128)
  hardwareId!: string;
}

/** Either a JSON list or a CSV text (header `deviceId,hardwareId`), as factories export them. */
export class ImportAllowlistRequest {
  @ApiPropertyOptional({ type: [AllowlistEntryRequest], maxItems: 5000 })
  @ValidateIf((request: ImportAllowlistRequest) => request.entries !== undefined || request.csv === undefined)
  @IsArray({ message: 'entries or csv is required' })
  @ArrayMaxSize(5000)
  // @ValidateNested alone lets an element that is itself an array through (it validates that array's elements).
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => AllowlistEntryRequest)
  entries?: AllowlistEntryRequest[];

  @ApiPropertyOptional({ description: 'CSV with the header line `deviceId,hardwareId`, one device per line.', example: 'deviceId,hardwareId\ngw-0001,esp32s3-7c:df:a1:0b:22:c4', maxLength: 200_000 })
  @Optional()
  @IsString()
  @MaxLength(200_000)
  csv?: string;
}

export class ImportAllowlistResponse {
  @ApiProperty({ description: 'Pairs stored (new or replaced).', example: 2 })
  imported!: number;
}
