import { ApiProperty, IntersectionType, OmitType } from '@nestjs/swagger';
import { MAX_QUEUED_PER_DEVICE } from '../../commands/index.js';
import { TelemetryExportQuery } from '../../telemetry/index.js';
import { ListDevicesQuery } from './dashboard.dto.js';

/** The device list's filters, without its paging: a fleet action takes every device they select. */
export class FleetFilterQuery extends OmitType(ListDevicesQuery, ['limit', 'cursor'] as const) {}

/** The list's filters and the per-device export's range, battery and format. */
export class FleetTelemetryQuery extends IntersectionType(FleetFilterQuery, TelemetryExportQuery) {}

export class FleetConfiguredResponse {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Selected devices that now have the change (those that had these values already included).', example: 42 })
  devices!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Selected devices left as they were: shared with you as a viewer (by a share or an organization role), or no longer yours to change when their turn came.',
    example: 3,
  })
  skipped!: number;
}

export class FleetCommandedResponse {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Selected devices the command was queued for.', example: 42 })
  devices!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Selected devices not sent it: shared with you as a viewer (by a share or an organization role), or no longer yours to command when their turn came.',
    example: 3,
  })
  skipped!: number;

  @ApiProperty({ type: 'integer', minimum: 0, description: `Selected devices you may command whose queue was full (${MAX_QUEUED_PER_DEVICE} commands waiting): not sent it.`, example: 1 })
  queueFull!: number;
}
