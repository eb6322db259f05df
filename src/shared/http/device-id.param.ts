import { Param, type PipeTransform } from '@nestjs/common';
import { ValidationFailedError } from '../domain-error.js';
import { DEVICE_ID_PATTERN } from '../kernel/device-id.js';

class DeviceIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!DEVICE_ID_PATTERN.test(value)) throw new ValidationFailedError([{ field: 'deviceId', message: 'deviceId must be 1–64 characters of A–Z a–z 0–9 . _ : -' }]);
    return value;
  }
}

/** The :deviceId path parameter, checked against the device id shape before any lookup. */
export const DeviceIdParam = () => Param('deviceId', new DeviceIdPipe());
