import { ApiProperty } from '@nestjs/swagger';
import { IsString, Length, Matches } from 'class-validator';
import { DEVICE_ID_PATTERN } from './register-device.request.js';

export class DeviceLoginRequest {
  @ApiProperty({ example: 'gw-0001', pattern: DEVICE_ID_PATTERN.source, minLength: 1, maxLength: 64 })
  @IsString()
  @Length(1, 64)
  @Matches(DEVICE_ID_PATTERN, { message: 'deviceId must be 1–64 characters of A–Z a–z 0–9 . _ : -' })
  deviceId!: string;

  @ApiProperty({ description: 'The deviceSecret returned by registration.', example: 'q7w4Yx0bW7b0R2mCw0w5m1cN1x6f3j8Hh2kP9sT4uVw', minLength: 1, maxLength: 128 })
  @IsString()
  @Length(1, 128)
  deviceSecret!: string;
}

export class RefreshTokenRequest {
  @ApiProperty({ description: 'The refresh token from register, login or an earlier refresh. Single use.', example: 'dcr_3N5c0mY0t8d7Jq2Lk1Vx9Zb6Wf4Hs2Ra8Tg1Pe7Uu0', minLength: 1, maxLength: 256 })
  @IsString()
  @Length(1, 256)
  refreshToken!: string;
}
