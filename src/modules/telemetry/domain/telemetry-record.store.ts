import type { TelemetryRecord } from './telemetry-record.js';

/** What a write did: how many records were new, and which of the others (their positions in the call) are stored with other metrics. */
export interface WriteResult {
  inserted: number;
  conflicting: number[];
}

/** Where admitted records go: stored once per (device, ts, batteryId), whoever sends them again. */
export abstract class TelemetryRecordStore {
  /** Stores the records; resolves once they are committed. `now` is when the device was last seen. */
  abstract write(deviceId: string, records: TelemetryRecord[], now: Date): Promise<WriteResult>;
}
