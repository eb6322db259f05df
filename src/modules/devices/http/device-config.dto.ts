import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, IsInt, Max, Min } from 'class-validator';
import type { DeviceConfigView } from '../application/device-config.service.js';
import { CONFIG_RULES, type ConfigOverrides, type ConfigSettings, type FleetDefaults, type TemperatureRange } from '../domain/device-config.js';
import { DeviceConfigResponse } from './device.response.js';

const rule = CONFIG_RULES;
type IntKey = 'telemetryIntervalSec' | 'uploadBatchSize' | 'otaCheckIntervalSec' | 'otaMinSoc';
/** Documentation examples, within the rule bounds: the shipped fleet defaults, and a typical override. */
const DEFAULT_EXAMPLES: Record<IntKey, number> = { telemetryIntervalSec: 60, uploadBatchSize: 50, otaCheckIntervalSec: 3600, otaMinSoc: 40 };
const OVERRIDE_EXAMPLES: Record<IntKey, number> = { telemetryIntervalSec: 300, uploadBatchSize: 100, otaCheckIntervalSec: 21_600, otaMinSoc: 60 };
/** The temperature range: an object of two integers. */
const rangeDoc = (example: TemperatureRange = { min: 0, max: 45 }) => {
  const r = rule.otaTemperatureRange as { min: number; max: number; description: string };
  const end = (value: number) => ({ type: 'integer' as const, minimum: r.min, maximum: r.max, example: value });
  return { type: 'object' as const, required: ['min', 'max'], properties: { min: end(example.min), max: end(example.max) }, description: `${r.description} min below max.`, example };
};
const intDoc = (key: IntKey, example: number = DEFAULT_EXAMPLES[key]) => {
  const r = rule[key] as { min: number; max: number; description: string };
  return { type: 'integer' as const, minimum: r.min, maximum: r.max, description: r.description, example };
};
const enumDoc = (key: 'otaChannel' | 'logLevel' | 'logUpload') => {
  const r = rule[key] as { values: readonly string[]; description: string };
  return { enum: [...r.values], description: r.description };
};

export class ConfirmAppliedConfigRequest {
  @ApiProperty({ description: 'The configuration version the gateway now runs.', example: 3, minimum: 1 })
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  version!: number;
}

/** Every key optional; bounds are checked by validateConfigPatch (one rule table for docs and checks). */
export class ConfigOverridesPatchRequest {
  @ApiPropertyOptional({ ...intDoc('telemetryIntervalSec', OVERRIDE_EXAMPLES.telemetryIntervalSec), nullable: true })
  @Allow()
  telemetryIntervalSec?: number | null;

  @ApiPropertyOptional({ ...intDoc('uploadBatchSize', OVERRIDE_EXAMPLES.uploadBatchSize), nullable: true })
  @Allow()
  uploadBatchSize?: number | null;

  @ApiPropertyOptional({ ...intDoc('otaCheckIntervalSec', OVERRIDE_EXAMPLES.otaCheckIntervalSec), nullable: true })
  @Allow()
  otaCheckIntervalSec?: number | null;

  @ApiPropertyOptional({ ...enumDoc('otaChannel'), nullable: true })
  @Allow()
  otaChannel?: ConfigSettings['otaChannel'] | null;

  @ApiPropertyOptional({ ...enumDoc('logLevel'), nullable: true })
  @Allow()
  logLevel?: ConfigSettings['logLevel'] | null;

  @ApiPropertyOptional({ ...enumDoc('logUpload'), nullable: true })
  @Allow()
  logUpload?: ConfigSettings['logUpload'] | null;

  @ApiPropertyOptional({ ...intDoc('otaMinSoc', OVERRIDE_EXAMPLES.otaMinSoc), nullable: true })
  @Allow()
  otaMinSoc?: number | null;

  @ApiPropertyOptional({ ...rangeDoc({ min: 5, max: 40 }), nullable: true })
  @Allow()
  otaTemperatureRange?: TemperatureRange | null;
}

export class ConfigDefaultsPatchRequest {
  @ApiPropertyOptional(intDoc('telemetryIntervalSec'))
  @Allow()
  telemetryIntervalSec?: number;

  @ApiPropertyOptional(intDoc('uploadBatchSize'))
  @Allow()
  uploadBatchSize?: number;

  @ApiPropertyOptional(intDoc('otaCheckIntervalSec'))
  @Allow()
  otaCheckIntervalSec?: number;

  @ApiPropertyOptional(enumDoc('otaChannel'))
  @Allow()
  otaChannel?: ConfigSettings['otaChannel'];

  @ApiPropertyOptional(enumDoc('logLevel'))
  @Allow()
  logLevel?: ConfigSettings['logLevel'];

  @ApiPropertyOptional(enumDoc('logUpload'))
  @Allow()
  logUpload?: ConfigSettings['logUpload'];

  @ApiPropertyOptional(intDoc('otaMinSoc'))
  @Allow()
  otaMinSoc?: number;

  @ApiPropertyOptional(rangeDoc())
  @Allow()
  otaTemperatureRange?: TemperatureRange;
}

export class ConfigOverridesResponse {
  @ApiPropertyOptional(intDoc('telemetryIntervalSec', OVERRIDE_EXAMPLES.telemetryIntervalSec))
  telemetryIntervalSec?: number;
  @ApiPropertyOptional(intDoc('uploadBatchSize', OVERRIDE_EXAMPLES.uploadBatchSize))
  uploadBatchSize?: number;
  @ApiPropertyOptional(intDoc('otaCheckIntervalSec', OVERRIDE_EXAMPLES.otaCheckIntervalSec))
  otaCheckIntervalSec?: number;
  @ApiPropertyOptional(enumDoc('otaChannel'))
  otaChannel?: ConfigSettings['otaChannel'];
  @ApiPropertyOptional(enumDoc('logLevel'))
  logLevel?: ConfigSettings['logLevel'];
  @ApiPropertyOptional(enumDoc('logUpload'))
  logUpload?: ConfigSettings['logUpload'];
  @ApiPropertyOptional(intDoc('otaMinSoc', OVERRIDE_EXAMPLES.otaMinSoc))
  otaMinSoc?: number;
  @ApiPropertyOptional(rangeDoc({ min: 5, max: 40 }))
  otaTemperatureRange?: TemperatureRange;
}

export class DashboardDeviceConfigResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({
    type: DeviceConfigResponse,
    description: 'The configuration the device should run: fleet defaults merged with its overrides.',
    example: { version: 3, telemetryIntervalSec: 300, uploadBatchSize: 50, otaCheckIntervalSec: 3600, otaChannel: 'stable', logLevel: 'info', logUpload: 'errors', otaMinSoc: 40, otaTemperatureRange: { min: 0, max: 45 }, updatedAt: '2026-11-21T12:00:00.000Z' },
  })
  config!: DeviceConfigResponse;

  @ApiProperty({ type: ConfigOverridesResponse, description: 'The keys this device overrides (absent keys follow the fleet defaults).', example: { telemetryIntervalSec: 300, logLevel: 'info' } })
  overrides!: ConfigOverrides;

  @ApiProperty({ type: 'integer', nullable: true, description: 'The highest version the gateway confirmed applying.', example: 3 })
  appliedVersion!: number | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-21T12:05:00.000Z' })
  appliedAt!: string | null;

  @ApiProperty({ enum: ['in_sync', 'pending'] })
  status!: 'in_sync' | 'pending';

  static from(view: DeviceConfigView): DashboardDeviceConfigResponse {
    return {
      deviceId: view.deviceId,
      config: DeviceConfigResponse.from(view.config),
      overrides: view.overrides,
      appliedVersion: view.appliedVersion,
      appliedAt: view.appliedAt?.toISOString() ?? null,
      status: view.appliedVersion === view.config.version ? 'in_sync' : 'pending',
    };
  }
}

export class ConfigDefaultsResponse {
  @ApiProperty({ description: 'Grows with every change of the defaults.', example: 2 })
  revision!: number;

  @ApiProperty(intDoc('telemetryIntervalSec'))
  telemetryIntervalSec!: number;
  @ApiProperty(intDoc('uploadBatchSize'))
  uploadBatchSize!: number;
  @ApiProperty(intDoc('otaCheckIntervalSec'))
  otaCheckIntervalSec!: number;
  @ApiProperty(enumDoc('otaChannel'))
  otaChannel!: ConfigSettings['otaChannel'];
  @ApiProperty(enumDoc('logLevel'))
  logLevel!: ConfigSettings['logLevel'];
  @ApiProperty(enumDoc('logUpload'))
  logUpload!: ConfigSettings['logUpload'];
  @ApiProperty(intDoc('otaMinSoc'))
  otaMinSoc!: number;
  @ApiProperty(rangeDoc())
  otaTemperatureRange!: TemperatureRange;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  updatedAt!: string;

  static from(defaults: FleetDefaults): ConfigDefaultsResponse {
    return { revision: defaults.revision, ...defaults.settings, updatedAt: defaults.updatedAt.toISOString() };
  }
}
