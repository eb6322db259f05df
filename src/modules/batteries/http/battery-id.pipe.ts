import type { PipeTransform } from '@nestjs/common';
import { ValidationFailedError } from '../../../shared/domain-error.js';
import { BATTERY_ID_PATTERN } from '../../telemetry/index.js';

/** The :batteryId path parameter, checked against the shape ingest accepts before any lookup. */
export class BatteryIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!BATTERY_ID_PATTERN.test(value)) throw new ValidationFailedError([{ field: 'batteryId', message: `batteryId must match ${BATTERY_ID_PATTERN.source}` }]);
    return value;
  }
}
