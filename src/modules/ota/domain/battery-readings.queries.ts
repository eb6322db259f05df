import type { BatteryReadings } from './battery-guard.js';

/** Port: the newest battery readings of a device (the telemetry module stores them). */
export abstract class BatteryReadingsQueries {
  abstract of(deviceId: string): Promise<BatteryReadings>;
}
