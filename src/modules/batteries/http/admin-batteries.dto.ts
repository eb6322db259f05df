import { ApiProperty } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { PageQuery } from '../../../shared/http/page-query.js';
import { CHEMISTRIES } from '../domain/battery-profile.js';
import type { RankedBattery } from '../domain/outliers.js';

const OUTLIER_METRICS = ['cellImbalance', 'sohDecline', 'selfDischarge'] as const;

/** metric, limit (1–100) and cursor. */
export class BatteryOutliersQuery extends PageQuery(100) {
  @ApiProperty({ enum: OUTLIER_METRICS, example: 'cellImbalance' })
  @IsIn(OUTLIER_METRICS)
  metric!: (typeof OUTLIER_METRICS)[number];
}

export class BatteryOutlierResponse {
  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ example: 'main' })
  batteryId!: string;

  @ApiProperty({ enum: CHEMISTRIES, example: 'lfp' })
  chemistry!: string;

  @ApiProperty({ example: 100 })
  capacityAh!: number;

  @ApiProperty({ example: 0.21, description: 'cellImbalance: V; sohDecline: soh points per 30 days; selfDischarge: SoC points per idle day.' })
  value!: number;

  @ApiProperty({ example: 0.025, description: 'The median of the batteries of the same chemistry and capacity.' })
  fleetMedian!: number;

  @ApiProperty({ example: 0.185, description: 'value − fleetMedian; the list is ordered by it, largest first.' })
  deviation!: number;

  @ApiProperty({ type: 'number', nullable: true, example: 24.7, description: 'deviation ÷ (1.4826 × the group’s median absolute deviation); null when the group does not vary.' })
  robustZ!: number | null;

  @ApiProperty({ example: 12 })
  groupSize!: number;

  static from(ranked: RankedBattery): BatteryOutlierResponse {
    return { ...ranked };
  }
}

export class BatteryOutliersResponse {
  @ApiProperty({ enum: OUTLIER_METRICS, example: 'cellImbalance' })
  metric!: string;

  @ApiProperty({ type: [BatteryOutlierResponse] })
  items!: BatteryOutlierResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: 'NTA', description: 'Pass as cursor for the next page; null on the last. The ranking is computed afresh for each page.' })
  nextCursor!: string | null;
}
