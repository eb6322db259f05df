import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PageQuery } from '../../../shared/http/page-query.js';
import { Transform } from 'class-transformer';
import { Allow, ArrayMaxSize, IsArray, IsBoolean, IsNumber, IsString, IsUUID, Max, MaxLength, Min } from 'class-validator';
import type { DeviceSummaryRow } from '../domain/dashboard-queries.js';
import { type FleetDefaults, MAX_TAGS, NAME_MAX_LENGTH, TAG_MAX_LENGTH } from '../../devices/index.js';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { DEVICE_ROLES, type DeviceRole } from '../../sharing/index.js';

/** A query value as an array: a parameter given once arrives as a string, given twice as an array. */
const asArray = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? [value] : value));
/** Exactly `true` or `false`; anything else stays a string, which IsBoolean refuses. */
const asBoolean = Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value));
/** A plain decimal number; anything else (empty, `1e1`, `0x10`, `Infinity`) stays a string, which IsNumber refuses. */
const asDecimal = Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\d{1,3}(\.\d{1,6})?$/.test(value) ? Number(value) : value));

/** limit (1–100), cursor, and the filters: a device is listed when it meets every one given. */
export class ListDevicesQuery extends PageQuery(100) {
  @ApiPropertyOptional({
    type: 'string',
    format: 'uuid',
    description: "Only this organization's devices (GET /api/v1/organizations): all of them for its members, by their role; an organization you are no member of lists nothing. Without it, every device you see.",
    example: '5b2f8c1e-3d4a-4e6b-9c7d-8e9f0a1b2c3d',
  })
  @Optional()
  @IsUUID('all', { message: 'organizationId must be an organization id' })
  organizationId?: string;

  @ApiPropertyOptional({
    type: 'string',
    maxLength: 200,
    description: `Case-insensitive substring of the device's name or deviceId (1–${NAME_MAX_LENGTH} characters; surrounding spaces are trimmed).`,
    example: 'garage',
  })
  @Optional()
  @IsString()
  @MaxLength(200)
  q?: string;

  @ApiPropertyOptional({
    type: [String],
    maxItems: MAX_TAGS,
    description: `Devices having every one of these tags. Repeat the parameter (\`tag=a&tag=b\`) or separate with commas (\`tag=a,b\`): the same. Upper case is lowered, as when tags are stored.`,
    example: ['roof', 'site-7'],
  })
  @Optional()
  @asArray
  @IsArray()
  @ArrayMaxSize(MAX_TAGS)
  @IsString({ each: true })
  @MaxLength(MAX_TAGS * (TAG_MAX_LENGTH + 1), { each: true })
  tag?: string[];

  @ApiPropertyOptional({
    type: 'boolean',
    description: 'Only devices that are online (true) or not (false), by the rule of the `online` field: telemetry within three of the device\'s telemetry intervals.',
    example: false,
  })
  @Optional()
  @asBoolean
  @IsBoolean()
  online?: boolean;

  @ApiPropertyOptional({ type: 'string', maxLength: 64, description: 'Only devices that report exactly this firmware version.', example: '0.1.4' })
  @Optional()
  @IsString()
  @MaxLength(64)
  firmwareVersion?: string;

  @ApiPropertyOptional({
    type: 'number',
    minimum: 0,
    maximum: 100,
    description: 'Only devices where the latest `soc` (state of charge, %) of at least one battery is below this.',
    example: 20,
  })
  @Optional()
  @asDecimal
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(100)
  socBelow?: number;
}

/** Every key optional; the rules are checked by parseLabelsPatch (devices module), which trims, lowers and dedupes. */
export class DeviceLabelsPatchRequest {
  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    minLength: 1,
    maxLength: NAME_MAX_LENGTH,
    description: `What you call the device: 1–${NAME_MAX_LENGTH} printable characters, surrounding spaces trimmed; null clears it.`,
    example: 'Garage battery',
  })
  @Allow()
  name?: string | null;

  @ApiPropertyOptional({
    type: [String],
    maxItems: MAX_TAGS,
    description: `The device's tags, replacing the ones it has ([] clears them): at most ${MAX_TAGS}, each 1–${TAG_MAX_LENGTH} of a–z 0–9 . _ - (upper case is stored lower-cased; repeats count once).`,
    example: ['roof', 'site-7'],
  })
  @Allow()
  tags?: string[];
}

export class LatestMetricResponse {
  @ApiProperty({ example: 'main' })
  batteryId!: string;

  @ApiProperty({ example: 'voltage' })
  metric!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z' })
  ts!: string;

  @ApiProperty({ example: 52.1 })
  value!: number;
}

export class DeviceOwnerResponse {
  @ApiProperty({ format: 'uuid', example: '3f0b6a8e-2a52-4f7e-9a35-8c0d7c5e1b2a' })
  userId!: string;

  @ApiProperty({ example: 'ada@example.com' })
  email!: string;
}

export class ConfigSyncResponse {
  @ApiProperty({ description: 'The configuration version the device should run (GET /device/config).', example: 3 })
  desiredVersion!: number;

  @ApiProperty({ type: 'integer', nullable: true, description: 'The highest version the gateway confirmed (POST /device/config/applied); null: never confirmed.', example: 2 })
  appliedVersion!: number | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'When the gateway confirmed appliedVersion.', example: '2026-11-21T12:05:00.000Z' })
  appliedAt!: string | null;

  @ApiProperty({ enum: ['in_sync', 'pending'], description: 'in_sync when the applied version is the desired one.' })
  status!: 'in_sync' | 'pending';

  static from(row: DeviceSummaryRow, defaults: FleetDefaults): ConfigSyncResponse {
    const desiredVersion = defaults.revision + row.config_revision;
    return {
      desiredVersion,
      appliedVersion: row.applied_config_version,
      appliedAt: row.config_applied_at?.toISOString() ?? null,
      status: row.applied_config_version === desiredVersion ? 'in_sync' : 'pending',
    };
  }
}

export class DashboardDeviceResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ example: 'esp32s3-7c:df:a1:0b:22:c4' })
  hardwareId!: string;

  @ApiProperty({ type: 'string', nullable: true, description: 'What the owner calls the device; null: unnamed.', example: 'Garage battery' })
  name!: string | null;

  @ApiProperty({ type: [String], description: 'The owner\'s tags, sorted.', example: ['roof', 'site-7'] })
  tags!: string[];

  @ApiProperty({ example: '0.1.4' })
  firmwareVersion!: string;

  @ApiProperty({
    enum: DEVICE_ROLES,
    example: 'owner',
    description: 'What you are to the device: its `owner`; an `installer` or `viewer` it is shared with (viewers may not change it); `admin`: an administrator who neither owns it nor holds a share.',
  })
  access!: DeviceRole;

  @ApiPropertyOptional({
    type: DeviceOwnerResponse,
    nullable: true,
    description: 'Administrators only: who owns the device (null: nobody).',
    example: { userId: '3f0b6a8e-2a52-4f7e-9a35-8c0d7c5e1b2a', email: 'ada@example.com' },
  })
  owner?: DeviceOwnerResponse | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-20T09:30:00.000Z' })
  claimedAt!: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: '2026-11-21T12:00:00.000Z' })
  lastSeenAt!: string | null;

  @ApiProperty({ description: 'Telemetry received within three of the device\'s telemetry intervals (contact without telemetry, as in lastSeenAt, does not count).', example: true })
  online!: boolean;

  @ApiProperty({ type: [LatestMetricResponse], description: 'Latest value of every metric per battery.' })
  latestMetrics!: LatestMetricResponse[];

  @ApiProperty({
    type: ConfigSyncResponse,
    description: 'Whether the gateway runs the configuration it should.',
    example: { desiredVersion: 3, appliedVersion: 2, appliedAt: '2026-11-21T12:05:00.000Z', status: 'pending' },
  })
  config!: ConfigSyncResponse;

  static from(row: DeviceSummaryRow, online: boolean, forAdmin: boolean, defaults: FleetDefaults): DashboardDeviceResponse {
    return {
      deviceId: row.device_id,
      hardwareId: row.hardware_id,
      name: row.name,
      tags: row.tags,
      firmwareVersion: row.firmware_version,
      access: row.access,
      ...(forAdmin ? { owner: row.owner_id && row.owner_email ? { userId: row.owner_id, email: row.owner_email } : null } : {}),
      claimedAt: row.claimed_at?.toISOString() ?? null,
      lastSeenAt: row.last_seen_at?.toISOString() ?? null,
      online,
      latestMetrics: (row.latest ?? []).map((latest) => ({ batteryId: latest.batteryId, metric: latest.metric, ts: new Date(latest.ts).toISOString(), value: latest.value })),
      config: ConfigSyncResponse.from(row, defaults),
    };
  }
}

export class DashboardDeviceListResponse {
  @ApiProperty({ type: [DashboardDeviceResponse] })
  items!: DashboardDeviceResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.', example: 'Z3ctMDAwMQ' })
  nextCursor!: string | null;
}
