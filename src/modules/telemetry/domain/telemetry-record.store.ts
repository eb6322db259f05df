import type { TelemetryRecord } from './telemetry-record.js';

/** Where admitted records go: stored once per (device, ts, batteryId), whoever sends them again. */
export abstract class TelemetryRecordStore {
  /** Stores the records; resolves with how many were new, once they are committed. `now` is when the device was last seen. */
  abstract write(deviceId: string, records: TelemetryRecord[], now: Date): Promise<number>;
}
