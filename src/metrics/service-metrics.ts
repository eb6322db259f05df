import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { IngestMetrics } from '../modules/telemetry/index.js';
import { RateLimitMetrics } from '../shared/rate-limit/rate-limit-metrics.js';

/** Seconds; from a cached poll (~1 ms) to the 10 s a request may take to arrive. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * This process's metrics, in a registry of its own (not prom-client's global one), so that two
 * instances in one process (the e2e tests) keep theirs apart. Counters and histograms that code
 * on the request path moves; src/metrics/scrape-gauges.ts adds what is read at scrape time.
 */
export class ServiceMetrics {
  readonly registry = new Registry();

  readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from the request arriving to the answer sent, by route pattern (unmatched: no route), method and status.',
    labelNames: ['route', 'method', 'status_code'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly ingestBatches = new Counter({
    name: 'dcs_ingest_batches_total',
    help: 'Telemetry uploads (POST /api/v1/telemetry) stored and answered 200.',
    registers: [this.registry],
  });

  readonly ingestRecords = new Counter({
    name: 'dcs_ingest_records_total',
    help: 'Records of answered uploads: accepted (stored as new), duplicate (stored before, the same), rejected (refused, not stored), conflicting (stored before with other metrics; not stored again).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly flushUploads = new Histogram({
    name: 'dcs_ingest_flush_uploads',
    help: 'Uploads one group-commit statement carried.',
    buckets: [1, 2, 3, 5, 10, 20, 50, 100, 200, 500],
    registers: [this.registry],
  });

  readonly flushRecords = new Histogram({
    name: 'dcs_ingest_flush_records',
    help: 'Records one group-commit statement carried (at most 1000).',
    buckets: [1, 5, 10, 25, 50, 100, 250, 500, 1000],
    registers: [this.registry],
  });

  readonly flushDuration = new Histogram({
    name: 'dcs_ingest_flush_duration_seconds',
    help: 'Time of one group-commit statement, from sending it to its commit.',
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly rateLimitRefusals = new Counter({
    name: 'dcs_rate_limit_refusals_total',
    help: 'Requests refused with 429, by the limit that refused them.',
    labelNames: ['limiter'] as const,
    registers: [this.registry],
  });

  constructor() {
    // Process CPU, memory, handles, GC, and the event-loop delay (nodejs_eventloop_lag_*), sampled every 10 ms.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 10 });
  }
}

export class PrometheusIngestMetrics extends IngestMetrics {
  private readonly accepted: Counter.Internal;
  private readonly duplicates: Counter.Internal;
  private readonly rejected: Counter.Internal;
  private readonly conflicting: Counter.Internal;

  constructor(private readonly metrics: ServiceMetrics) {
    super();
    this.accepted = metrics.ingestRecords.labels('accepted');
    this.duplicates = metrics.ingestRecords.labels('duplicate');
    this.rejected = metrics.ingestRecords.labels('rejected');
    this.conflicting = metrics.ingestRecords.labels('conflicting');
    // Present from the first scrape, so rate() has a start.
    for (const child of [this.accepted, this.duplicates, this.rejected, this.conflicting]) child.inc(0);
  }

  uploaded(accepted: number, duplicates: number, rejected: number, conflicting: number): void {
    this.metrics.ingestBatches.inc();
    if (accepted > 0) this.accepted.inc(accepted);
    if (duplicates > 0) this.duplicates.inc(duplicates);
    if (rejected > 0) this.rejected.inc(rejected);
    if (conflicting > 0) this.conflicting.inc(conflicting);
  }

  flushed(uploads: number, records: number, seconds: number): void {
    this.metrics.flushUploads.observe(uploads);
    this.metrics.flushRecords.observe(records);
    this.metrics.flushDuration.observe(seconds);
  }
}

export class PrometheusRateLimitMetrics extends RateLimitMetrics {
  constructor(private readonly metrics: ServiceMetrics) {
    super();
  }

  refused(limiter: string): void {
    this.metrics.rateLimitRefusals.inc({ limiter });
  }
}
