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
    const inserted = accepted.length > 0 ? await this.writer.write(deviceId, accepted, now) : 0;
    this.metrics.uploaded(inserted, accepted.length - inserted, rejected.length);
    return { accepted: inserted, duplicates: accepted.length - inserted, rejected };
  }
}
