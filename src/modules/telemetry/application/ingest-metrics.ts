/**
 * What ingest reports about its work, for the metrics: each upload answered and each group-commit
 * statement. The abstract class is the injection token; src/metrics implements it. Calls sit on
 * the hot path, so implementations only add to counters.
 */
export abstract class IngestMetrics {
  /** An upload answered 200: its records stored as new, already stored (the same), refused, and stored already with other metrics. */
  abstract uploaded(accepted: number, duplicates: number, rejected: number, conflicting: number): void;
  /** One ingest statement committed: how many uploads and records it carried, and its time in seconds. */
  abstract flushed(uploads: number, records: number, seconds: number): void;
}

/** Metrics off: nothing is measured. */
export class UnmeasuredIngest extends IngestMetrics {
  uploaded(): void {}
  flushed(): void {}
}
