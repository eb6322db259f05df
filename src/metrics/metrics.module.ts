import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { Env } from '../config/env.js';
import { AlertsModule, AlertsService } from '../modules/alerts/index.js';
import { CommandsModule, CommandWaiters } from '../modules/commands/index.js';
import { StreamModule, StreamsService } from '../modules/stream/index.js';
import { IngestMetrics, UnmeasuredIngest } from '../modules/telemetry/index.js';
import { DatabaseConnection } from '../shared/database/database-connection.js';
import { ReadReplicas } from '../shared/database/read-replicas.js';
import { JobQueue } from '../shared/jobs/job-queue.js';
import { RateLimitMetrics, UncountedRefusals } from '../shared/rate-limit/rate-limit-metrics.js';
import { MetricsServer } from './metrics-server.js';
import { RequestDurations } from './request-metrics.js';
import { ScrapeGauges } from './scrape-gauges.js';
import { PrometheusIngestMetrics, PrometheusRateLimitMetrics, ServiceMetrics } from './service-metrics.js';
import { MemoryCaches } from '../shared/memory/memory-caches.js';

/**
 * Prometheus metrics of this process. METRICS_PORT unset: the ports the modules report through
 * (IngestMetrics, RateLimitMetrics) do nothing, no listener opens and no request is timed.
 * Set: they count, and MetricsServer serves the registry on a listener of its own.
 * The modules only see their ports; this module reads the rest through their public surfaces.
 */
@Global()
@Module({})
export class MetricsModule {
  static register(env: Env): DynamicModule {
    if (env.METRICS_PORT === undefined) {
      return {
        module: MetricsModule,
        providers: [
          { provide: IngestMetrics, useClass: UnmeasuredIngest },
          { provide: RateLimitMetrics, useClass: UncountedRefusals },
        ],
        exports: [IngestMetrics, RateLimitMetrics],
      };
    }
    const port = env.METRICS_PORT;
    return {
      module: MetricsModule,
      imports: [StreamModule, AlertsModule, CommandsModule],
      providers: [
        { provide: ServiceMetrics, useFactory: () => new ServiceMetrics() },
        { provide: IngestMetrics, inject: [ServiceMetrics], useFactory: (metrics: ServiceMetrics) => new PrometheusIngestMetrics(metrics) },
        { provide: RateLimitMetrics, inject: [ServiceMetrics], useFactory: (metrics: ServiceMetrics) => new PrometheusRateLimitMetrics(metrics) },
        { provide: RequestDurations, inject: [ServiceMetrics], useFactory: (metrics: ServiceMetrics) => new RequestDurations(metrics.requestDuration) },
        {
          provide: ScrapeGauges,
          inject: [ServiceMetrics, DatabaseConnection, JobQueue, StreamsService, AlertsService, CommandWaiters, MemoryCaches, ReadReplicas],
          useFactory: (metrics: ServiceMetrics, database: DatabaseConnection, jobs: JobQueue, streams: StreamsService, alerts: AlertsService, waiters: CommandWaiters, caches: MemoryCaches, replicas: ReadReplicas) =>
            new ScrapeGauges(metrics, database, jobs, streams, alerts, waiters, caches, replicas),
        },
        { provide: MetricsServer, inject: [ServiceMetrics], useFactory: (metrics: ServiceMetrics) => new MetricsServer(metrics.registry, { port, host: env.METRICS_HOST }) },
      ],
      exports: [IngestMetrics, RateLimitMetrics, RequestDurations, MetricsServer],
    };
  }
}
