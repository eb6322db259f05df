import type { TelemetryRecord } from '../../../src/modules/telemetry/domain/telemetry-record.js';
import { TelemetryRecordStore, type WriteResult } from '../../../src/modules/telemetry/domain/telemetry-record.store.js';

/** jsonb equality, as the conflict check compares: the same names with the same values, in any order. */
function sameMetrics(a: Record<string, number>, b: Record<string, number>): boolean {
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((name) => Object.hasOwn(b, name) && a[name] === b[name]);
}

/** The ingest statement's rules in memory: a (device, batteryId, ts) is stored once, the first value wins; last seen only moves forward. */
export class InMemoryTelemetryRecordStore extends TelemetryRecordStore {
  readonly stored = new Map<string, TelemetryRecord & { deviceId: string }>();
  readonly lastSeen = new Map<string, Date>();
  /** Every call, as the service made it. */
  readonly writes: Array<{ deviceId: string; records: TelemetryRecord[]; now: Date }> = [];

  async write(deviceId: string, records: TelemetryRecord[], now: Date): Promise<WriteResult> {
    this.writes.push({ deviceId, records, now });
    let inserted = 0;
    const conflicting: number[] = [];
    for (const [position, record] of records.entries()) {
      const key = `${deviceId}|${record.batteryId}|${record.ts.toISOString()}`;
      const stored = this.stored.get(key);
      if (stored) {
        if (!sameMetrics(stored.metrics, record.metrics)) conflicting.push(position);
        continue;
      }
      this.stored.set(key, { deviceId, ts: record.ts, batteryId: record.batteryId, metrics: record.metrics });
      inserted += 1;
    }
    const seen = this.lastSeen.get(deviceId);
    if (!seen || seen < now) this.lastSeen.set(deviceId, now);
    return { inserted, conflicting };
  }
}
