import { Counter, Gauge } from 'prom-client';
import { AlertsService, type UnresolvedAlerts } from '../modules/alerts/index.js';
import { CommandWaiters } from '../modules/commands/index.js';
import { StreamsService } from '../modules/stream/index.js';
import { DatabaseConnection } from '../shared/database/database-connection.js';
import type { ReadReplicas } from '../shared/database/read-replicas.js';
import { JobQueue, type QueueCounts } from '../shared/jobs/job-queue.js';
import type { MemoryCaches } from '../shared/memory/memory-caches.js';
import { ScrapeCache } from './scrape-cache.js';
import type { ServiceMetrics } from './service-metrics.js';

/** How long a database read made for a scrape is reused: less than any sensible scrape interval. */
export const SCRAPE_CACHE_MS = 10_000;

/**
 * Gauges read when Prometheus scrapes, not kept up to date on the way: the pool and the open
 * streams from memory, the job queues and unresolved alerts from the database (cached
 * SCRAPE_CACHE_MS). A read that fails leaves its series out of that scrape (unknown, not zero);
 * the rest of the scrape is answered.
 */
export class ScrapeGauges {
  constructor(metrics: ServiceMetrics, database: DatabaseConnection, jobQueue: JobQueue, streams: StreamsService, alertsService: AlertsService, commandWaiters: CommandWaiters, caches: MemoryCaches, replicas: ReadReplicas) {
    const jobs = new ScrapeCache<QueueCounts[]>(SCRAPE_CACHE_MS, () => jobQueue.counts());
    const alerts = new ScrapeCache<UnresolvedAlerts>(SCRAPE_CACHE_MS, () => alertsService.unresolved());
    const registers = [metrics.registry];

    new Gauge({
      name: 'dcs_db_pool_connections',
      help: "Connections of this instance's database pool: in_use (checked out) or idle.",
      labelNames: ['state'] as const,
      registers,
      collect() {
        this.reset();
        const usage = database.poolUsage();
        if (!usage) return;
        this.set({ state: 'in_use' }, usage.total - usage.idle);
        this.set({ state: 'idle' }, usage.idle);
      },
    });

    new Gauge({
      name: 'dcs_db_pool_waiting_requests',
      help: 'Queries of this instance waiting for a free pool connection (above 0: the pool is exhausted).',
      registers,
      collect() {
        this.reset();
        const usage = database.poolUsage();
        if (usage) this.set(usage.waiting);
      },
    });

    new Gauge({
      name: 'dcs_db_replica_lag_seconds',
      help: 'How far each read replica (DATABASE_REPLICA_URLS) was behind the primary at its last check, rounded up to REPLICA_CHECK_INTERVAL_MS; absent while unknown (unreachable, not a standby).',
      labelNames: ['replica'] as const,
      registers,
      collect() {
        this.reset();
        for (const { name, lagMs } of replicas.states()) if (lagMs !== null) this.set({ replica: name }, lagMs / 1000);
      },
    });

    new Gauge({
      name: 'dcs_db_replica_serving',
      help: 'Whether each read replica serves reads now (1), or is skipped (0, `reason`: lagging, unreachable, not-a-standby, failed, not-checked) and the primary serves its reads.',
      labelNames: ['replica', 'reason'] as const,
      registers,
      collect() {
        this.reset();
        for (const { name, skipped } of replicas.states()) this.set({ replica: name, reason: skipped ?? 'serving' }, skipped === null ? 1 : 0);
      },
    });

    new Gauge({
      name: 'dcs_jobs',
      help: "Jobs per queue as pg-boss last counted them (every minute): queued (waiting, retries included), active, failed (failed for good, kept for the queue's retention). The same on every instance.",
      labelNames: ['queue', 'state'] as const,
      registers,
      async collect() {
        this.reset();
        const counts = await jobs.get().catch(() => []);
        for (const { queue, queued, active, failed } of counts) {
          this.set({ queue, state: 'queued' }, queued);
          this.set({ queue, state: 'active' }, active);
          this.set({ queue, state: 'failed' }, failed);
        }
      },
    });

    new Gauge({
      name: 'dcs_stream_subscribers',
      help: 'Dashboard streams (Server-Sent Events) open on this instance.',
      registers,
      collect() {
        this.set(streams.openStreams());
      },
    });

    new Gauge({
      name: 'dcs_cache_entries',
      help: 'Entries held by each in-memory cache of this instance that grows with the fleet (per device or per account).',
      labelNames: ['cache'] as const,
      registers,
      collect() {
        for (const { name, size } of caches.census()) this.set({ cache: name }, size);
      },
    });

    new Gauge({
      name: 'dcs_cache_capacity',
      help: 'Entries each in-memory cache holds at most (DEVICE_CACHE_MAX_ENTRIES, ACCOUNT_CACHE_MAX_ENTRIES).',
      labelNames: ['cache'] as const,
      registers,
      collect() {
        for (const { name, capacity } of caches.census()) this.set({ cache: name }, capacity);
      },
    });

    new Counter({
      name: 'dcs_cache_evictions_total',
      help: 'Entries each in-memory cache forgot to make room (least recently used first): steadily rising, the cache is smaller than the fleet this instance serves.',
      labelNames: ['cache'] as const,
      registers,
      collect() {
        this.reset();
        for (const { name, evictions } of caches.census()) this.inc({ cache: name }, evictions);
      },
    });

    new Gauge({
      name: 'dcs_command_long_polls',
      help: "Gateways' command long polls (GET /api/v1/device/commands?waitSec=…) held open on this instance.",
      registers,
      collect() {
        this.set(commandWaiters.size);
      },
    });

    new Gauge({
      name: 'dcs_alerts_unresolved',
      help: 'Battery alerts not resolved, of the whole fleet, by state (open, acknowledged). The same on every instance.',
      labelNames: ['state'] as const,
      registers,
      async collect() {
        this.reset();
        const unresolved = await alerts.get().catch(() => null);
        if (!unresolved) return;
        this.set({ state: 'open' }, unresolved.open);
        this.set({ state: 'acknowledged' }, unresolved.acknowledged);
      },
    });
  }
}
