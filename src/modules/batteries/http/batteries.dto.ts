import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsNumber, IsString, Length, Matches, Max, Min } from 'class-validator';
import { Optional } from '../../../shared/http/optional.decorator.js';
import type { BatteryHealth, BatteryListing, EnergyPoint } from '../application/batteries.service.js';
import { MAX_HEALTH_RANGE_DAYS } from '../application/batteries.service.js';
import { ENERGY_BUCKETS } from '../domain/energy.js';
import { CAPACITY_AH_RANGE, CHEMISTRIES, NOMINAL_VOLTAGE_RANGE, PROFILE_NAME_MAX_LENGTH, type BatteryProfile, type Chemistry } from '../domain/battery-profile.js';

const trimmed = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

export class BatteryProfileRequest {
  @ApiProperty({ example: 'Garage bank', minLength: 1, maxLength: PROFILE_NAME_MAX_LENGTH, description: 'Trimmed; no control characters.' })
  @trimmed
  @IsString()
  @Length(1, PROFILE_NAME_MAX_LENGTH)
  // eslint-disable-next-line no-control-regex
  @Matches(/^[^\u0000-\u001f\u007f]*$/, { message: 'name must not contain control characters' })
  name!: string;

  @ApiProperty({ enum: CHEMISTRIES, example: 'lfp' })
  @IsIn(CHEMISTRIES)
  chemistry!: Chemistry;

  @ApiProperty({ example: 12.8, minimum: NOMINAL_VOLTAGE_RANGE.min, maximum: NOMINAL_VOLTAGE_RANGE.max, description: 'V' })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(NOMINAL_VOLTAGE_RANGE.min)
  @Max(NOMINAL_VOLTAGE_RANGE.max)
  nominalVoltage!: number;

  @ApiProperty({ example: 100, minimum: CAPACITY_AH_RANGE.min, maximum: CAPACITY_AH_RANGE.max, description: 'Ah: what equivalent full cycles and time to empty are counted against.' })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(CAPACITY_AH_RANGE.min)
  @Max(CAPACITY_AH_RANGE.max)
  capacityAh!: number;
}

export class BatteryProfileResponse {
  @ApiProperty({ example: 'Garage bank' })
  name!: string;

  @ApiProperty({ enum: CHEMISTRIES, example: 'lfp' })
  chemistry!: Chemistry;

  @ApiProperty({ example: 12.8 })
  nominalVoltage!: number;

  @ApiProperty({ example: 100 })
  capacityAh!: number;

  @ApiProperty({ format: 'date-time', example: '2026-11-27T09:00:00.000Z' })
  updatedAt!: string;

  static from(profile: BatteryProfile): BatteryProfileResponse {
    return { name: profile.name, chemistry: profile.chemistry, nominalVoltage: profile.nominalVoltage, capacityAh: profile.capacityAh, updatedAt: profile.updatedAt.toISOString() };
  }
}

export class BatteryLatestMetricResponse {
  @ApiProperty({ example: 52.5 })
  value!: number;

  @ApiProperty({ format: 'date-time', example: '2026-11-27T09:00:00.000Z' })
  ts!: string;
}

export class BatteryResponse {
  @ApiProperty({ example: 'main' })
  batteryId!: string;

  @ApiProperty({
    type: BatteryProfileResponse,
    nullable: true,
    description: 'null until a profile is set.',
    example: { name: 'Garage bank', chemistry: 'lfp', nominalVoltage: 12.8, capacityAh: 100, updatedAt: '2026-11-27T09:00:00.000Z' },
  })
  profile!: BatteryProfileResponse | null;

  @ApiProperty({ type: 'object', additionalProperties: { type: 'object', required: ['value', 'ts'], properties: { value: { type: 'number', example: 52.5 }, ts: { type: 'string', format: 'date-time', example: '2026-11-27T09:00:00.000Z' } } }, description: 'The newest value of each metric the battery reported, by name.', example: { soc: { value: 52.5, ts: '2026-11-27T09:00:00.000Z' } } })
  latest!: Record<string, BatteryLatestMetricResponse>;

  @ApiPropertyOptional({ example: 18000, description: 'Seconds until empty at the average current of the last 15 minutes (discharging). Absent without a capacity, a SoC or a current, or while idle (|current| below capacity ÷ 1000).' })
  timeToEmptySec?: number;

  @ApiPropertyOptional({ example: 7200, description: 'Seconds until full at the average current of the last 15 minutes (charging); absent as timeToEmptySec.' })
  timeToFullSec?: number;

  static from(battery: BatteryListing): BatteryResponse {
    const latest: Record<string, BatteryLatestMetricResponse> = {};
    for (const [metric, { value, ts }] of Object.entries(battery.latest)) latest[metric] = { value, ts: ts.toISOString() };
    return {
      batteryId: battery.batteryId,
      profile: battery.profile ? BatteryProfileResponse.from(battery.profile) : null,
      latest,
      ...(battery.timeToEmptySec !== undefined ? { timeToEmptySec: battery.timeToEmptySec } : {}),
      ...(battery.timeToFullSec !== undefined ? { timeToFullSec: battery.timeToFullSec } : {}),
    };
  }
}

export class BatteryListResponse {
  @ApiProperty({ type: [BatteryResponse], description: 'Every battery that has a profile or has sent a record, by batteryId.' })
  items!: BatteryResponse[];
}

export class BatteryEnergyQuery {
  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-01T00:00:00Z', description: 'Start, widened down to its bucket’s edge. Default: 30 days before `to`.' })
  @Optional()
  @IsString()
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-27T00:00:00Z', description: 'End (exclusive), widened up to its bucket’s edge. Default: now.' })
  @Optional()
  @IsString()
  to?: string;

  @ApiPropertyOptional({ enum: Object.keys(ENERGY_BUCKETS), default: '1d', description: 'Bucket width, UTC, aligned to the Unix epoch (7 d buckets start on Thursdays).' })
  @Optional()
  @IsIn(Object.keys(ENERGY_BUCKETS))
  bucket?: string;
}

export class BatteryEnergyPointResponse {
  @ApiProperty({ format: 'date-time', example: '2026-11-26T00:00:00.000Z', description: 'The bucket’s start.' })
  ts!: string;

  @ApiProperty({ example: 41.2, description: 'Ah into the battery.' })
  chargedAh!: number;

  @ApiProperty({ example: 38.9, description: 'Ah out of the battery.' })
  dischargedAh!: number;

  @ApiProperty({ example: 540.3 })
  chargedWh!: number;

  @ApiProperty({ example: 498.1 })
  dischargedWh!: number;

  @ApiProperty({ type: 'number', nullable: true, example: 0.389, description: 'dischargedAh ÷ the profile’s capacityAh; null without a profile.' })
  equivalentFullCycles!: number | null;

  @ApiProperty({ example: 0.98, minimum: 0, maximum: 1, description: 'The share of the bucket covered by records at most 15 minutes apart; the rest (gaps, no records) contributes nothing.' })
  coverage!: number;

  static from(point: EnergyPoint): BatteryEnergyPointResponse {
    return { ...point, ts: point.ts.toISOString() };
  }
}

export class BatteryEnergyResponse {
  @ApiProperty({ example: 'main' })
  batteryId!: string;

  @ApiProperty({ example: 86400 })
  bucketSeconds!: number;

  @ApiProperty({ type: [BatteryEnergyPointResponse], description: 'Every bucket of the range, oldest first; a bucket without records answers 0 with coverage 0.' })
  points!: BatteryEnergyPointResponse[];
}

export class BatteryHealthQuery {
  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-01T00:00:00Z', description: 'Default: 30 days before `to`.' })
  @Optional()
  @IsString()
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-27T00:00:00Z', description: `Exclusive. Default: now. At most ${MAX_HEALTH_RANGE_DAYS} days after from.` })
  @Optional()
  @IsString()
  to?: string;
}

export class BatterySohPointResponse {
  @ApiProperty({ format: 'date-time', example: '2026-11-26T23:59:50.000Z' })
  ts!: string;

  @ApiProperty({ example: 97.5 })
  value!: number;
}

export class BatteryHealthResponse {
  @ApiProperty({ type: 'number', nullable: true, example: 12.4, description: 'Discharged Ah of the hours the range touches ÷ capacityAh; null without a profile.' })
  equivalentFullCycles!: number | null;

  @ApiProperty({ type: [Number], minItems: 10, maxItems: 10, example: [4, 2, 1, 0, 1, 0, 0, 0, 0, 0], description: 'Discharges by depth (from a local SoC maximum to the next minimum; turns count after 1 point of SoC): [0, 10), [10, 20), … [90, 100] %.' })
  depthOfDischargeHistogram!: number[];

  @ApiProperty({ example: 3600, description: 'Seconds with SoC above 90 %, the SoC a straight line between records at most 15 minutes apart.' })
  timeAboveSoc90Sec!: number;

  @ApiProperty({ example: 0 })
  timeBelowSoc20Sec!: number;

  @ApiProperty({ example: 0 })
  timeAboveTemperature45Sec!: number;

  @ApiProperty({ type: 'number', nullable: true, example: 22.5 })
  minSoc!: number | null;

  @ApiProperty({ type: 'number', nullable: true, example: 38.1 })
  maxTemperature!: number | null;

  @ApiProperty({ type: 'number', nullable: true, example: 0.031, description: 'The largest cellVoltageMax − cellVoltageMin of one record, V.' })
  maxCellImbalanceV!: number | null;

  @ApiProperty({ type: [BatterySohPointResponse], description: 'The last soh of each UTC day.' })
  soh!: BatterySohPointResponse[];

  static from(health: BatteryHealth): BatteryHealthResponse {
    return { ...health, soh: health.soh.map((point) => ({ ts: new Date(point.ts).toISOString(), value: point.value })) };
  }
}
