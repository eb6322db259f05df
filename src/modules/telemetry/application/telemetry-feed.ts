import { Injectable } from '@nestjs/common';
import { InProcessFeed } from '../../../shared/in-process-feed.js';
import type { TelemetryRecord } from '../domain/telemetry-record.js';

/** What one flush stored for one device: the records ingest actually inserted, after the commit. */
export interface StoredTelemetry {
  deviceId: string;
  ownerId: string | null;
  /**
   * Per battery, the newest record time stored before this flush (absent: none). Records at or
   * before it arrived late (a gateway uploading its backlog, a retry after a newer upload): stored,
   * but older than what was already heard of that battery.
   */
  previousNewestTs: Map<string, Date>;
  records: TelemetryRecord[];
}

/**
 * Tells this instance's listeners (alert evaluation, the live stream) what each ingest flush
 * stored, once it committed. Listeners run synchronously and must only hand the work on: the
 * requests of the flush are answered right after.
 */
@Injectable()
export class TelemetryFeed extends InProcessFeed<StoredTelemetry[]> {
  constructor() {
    super('stored-telemetry');
  }

  publish(stored: StoredTelemetry[]): void {
    if (stored.length > 0) this.notify(stored);
  }
}
