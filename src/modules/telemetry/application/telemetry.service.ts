import { Injectable } from '@nestjs/common';
import { Clock } from '../../../config/config.module.js';
import { Env } from '../../../config/env.js';
import { admit, type Rejection, type TelemetryRecord } from '../domain/telemetry-record.js';
import { TelemetryRecordStore } from '../domain/telemetry-record.store.js';
import { IngestMetrics } from './ingest-metrics.js';

export interface IngestResult {
  accepted: number;
  duplicates: number;
  rejected: Rejection[];
}

@Injectable()
export class TelemetryService {
  constructor(
    private readonly writer: TelemetryRecordStore,
    private readonly clock: Clock,
    private readonly env: Env,
    private readonly metrics: IngestMetrics,
  ) {}

  /** Answers only after the records are committed; a retried batch is counted as duplicates. */
  async ingest(deviceId: string, records: TelemetryRecord[]): Promise<IngestResult> {
    const now = this.clock.now();
    const { accepted, rejected } = admit(records, now, this.env.TELEMETRY_RETENTION_DAYS);
    const { inserted, conflicting } = accepted.length > 0 ? await this.writer.write(deviceId, accepted, now) : { inserted: 0, conflicting: [] };
    const conflicts = conflicting.map((position) => ({ index: accepted[position].index, code: 'CONFLICTS_WITH_STORED' as const }));
    const duplicates = accepted.length - inserted - conflicts.length;
    this.metrics.uploaded(inserted, duplicates, rejected.length, conflicts.length);
    return { accepted: inserted, duplicates, rejected: conflicts.length === 0 ? rejected : [...rejected, ...conflicts].sort((a, b) => a.index - b.index) };
  }
}
