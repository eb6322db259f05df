import { ApiProperty } from '@nestjs/swagger';
import { TokenResponse } from '../../../shared/http/token.response.js';
import type { Registration } from '../application/device-registration.service.js';
import type { Device } from '../domain/device.js';
import type { DeviceConfig } from '../domain/device-config.js';

export class DeviceConfigResponse {
  @ApiProperty({ description: 'Grows with every change that affects this device.', example: 1 })
  version!: number;

  @ApiProperty({ description: 'Seconds between telemetry samples.', example: 60 })
  telemetryIntervalSec!: number;

  @ApiProperty({ description: 'Records per telemetry upload.', example: 50 })
  uploadBatchSize!: number;

  @ApiProperty({ description: 'Seconds between OTA checks.', example: 3600 })
  otaCheckIntervalSec!: number;

  @ApiProperty({ enum: ['stable', 'beta'], example: 'stable', description: 'Release channel; beta gateways also receive stable releases.' })
  otaChannel!: 'stable' | 'beta';

  @ApiProperty({ enum: ['error', 'warn', 'info', 'debug'], example: 'warn', description: 'How much the gateway logs locally.' })
  logLevel!: 'error' | 'warn' | 'info' | 'debug';

  @ApiProperty({ enum: ['off', 'errors', 'all'], example: 'errors', description: 'Which log lines the gateway uploads (POST /device/logs): none, errors only, or all it logs.' })
  logUpload!: 'off' | 'errors' | 'all';

  @ApiProperty({ description: 'Updates are held back (GET /ota/latest) while the latest soc of a battery is below this (%).', example: 40 })
  otaMinSoc!: number;

  @ApiProperty({
    type: 'object',
    required: ['min', 'max'],
    properties: { min: { type: 'integer', example: 0 }, max: { type: 'integer', example: 45 } },
    description: 'Updates are held back while the latest temperature of a battery is outside this range (°C).',
    example: { min: 0, max: 45 },
  })
  otaTemperatureRange!: { min: number; max: number };

  @ApiProperty({ format: 'date-time', example: '2026-11-21T16:00:00.000Z', description: 'Last change of the fleet defaults or of this device\'s overrides.' })
  updatedAt!: string;

  static from(config: DeviceConfig): DeviceConfigResponse {
    return {
      version: config.version,
      telemetryIntervalSec: config.telemetryIntervalSec,
      uploadBatchSize: config.uploadBatchSize,
      otaCheckIntervalSec: config.otaCheckIntervalSec,
      otaChannel: config.otaChannel,
      logLevel: config.logLevel,
      logUpload: config.logUpload,
      otaMinSoc: config.otaMinSoc,
      otaTemperatureRange: { min: config.otaTemperatureRange.min, max: config.otaTemperatureRange.max },
      updatedAt: config.updatedAt.toISOString(),
    };
  }
}

export class RegisterDeviceResponse extends TokenResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ description: 'The device credential for login. Returned only here: store it on the gateway.', example: 'q7w4Yx0bW7b0R2mCw0w5m1cN1x6f3j8Hh2kP9sT4uVw' })
  deviceSecret!: string;

  @ApiProperty({ type: DeviceConfigResponse })
  config!: DeviceConfigResponse;

  static fromRegistration(registration: Registration): RegisterDeviceResponse {
    return {
      deviceId: registration.device.deviceId,
      deviceSecret: registration.deviceSecret,
      ...TokenResponse.from(registration.tokens),
      config: DeviceConfigResponse.from(registration.config),
    };
  }
}

export class DeviceMeResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ example: 'esp32s3-7c:df:a1:0b:22:c4' })
  hardwareId!: string;

  @ApiProperty({ example: '0.1.4' })
  firmwareVersion!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T16:00:00.000Z' })
  registeredAt!: string;

  @ApiProperty({ description: 'Whether a customer owns the device.', example: false })
  claimed!: boolean;

  static from(device: Device): DeviceMeResponse {
    return {
      deviceId: device.deviceId,
      hardwareId: device.hardwareId,
      firmwareVersion: device.firmwareVersion.value,
      registeredAt: device.registeredAt.toISOString(),
      claimed: device.isClaimed,
    };
  }
}

export { TokenResponse };
