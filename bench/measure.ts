import autocannon from 'autocannon';
import type pg from 'pg';
import { cpus } from 'node:os';
import { machineBusyUs, peakRssKb, postgresCpuUs, processCpuUs, resetPeakRss, rssKb } from './proc-stats.js';
import type { LoadSpec, Variant } from './scenarios.js';
import { firePaced, type LoadOutcome } from './paced.js';
import type { ServerProcess } from './servers.js';
import type { Fleet, IngestClock, Integrity, Workload } from './workloads.js';

export type Target = 'baseline' | 'service';

export interface LoadResult {
  name: string;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses outside 2xx other than the 304s the workload asked for. */
  non2xx: number;
  /** 304 Not Modified answers to If-None-Match (S4). */
  notModified: number;
  /** Connection errors and timeouts. */
  errors: number;
  unexpectedBodies: number;
  integrity?: Integrity;
}

export interface RunResult {
  variant: string;
  target: Target;
  round: number;
  loads: LoadResult[];
  /** CPU of the server's Node process per completed request (all loads), µs. */
  serverCpuUsPerRequest: number;
  /** CPU of every PostgreSQL process per completed request, µs. */
  postgresCpuUsPerRequest: number;
  /** CPU of this process (autocannon) per completed request, µs. */
  loadGeneratorCpuUsPerRequest: number;
  /** Peak RSS of the server process during the measured run, MB (VmHWM after a reset; sampled VmRSS if the reset is not allowed). */
  peakRssMb: number;
  /**
   * Share of the machine's CPU capacity used during the measured run by processes other than the
   * server, PostgreSQL and the load generator (the idle other server, and anything else running on
   * the machine). Above a few percent the run was disturbed.
   */
  otherCpuShare: number;
  /** PostgreSQL transactions committed or rolled back per completed request (variants that count them). */
  postgresTransactionsPerRequest?: number;
}

/** Backends report their statistics at most every 10 s when idle (PGSTAT_IDLE_INTERVAL): wait that out. */
const STATS_SETTLE_MS = 11_000;

async function transactionCount(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>('SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()');
  return Number(rows[0].n);
}

/** As fast as answered on `connections` (autocannon), or at an even pace when the load sets a rate (firePaced). */
async function fire(url: string, load: LoadSpec, workload: Workload, durationSec: number): Promise<LoadOutcome> {
  if (load.overallRate !== undefined) return firePaced(url, load.connections, load.overallRate, workload.request, durationSec);
  const result = await autocannon({ url, connections: load.connections, duration: durationSec, timeout: 10, requests: [workload.request] });
  return { requests: result.requests.total, durationSec: result.duration, p50Ms: result.latency.p50, p99Ms: result.latency.p99, non2xx: result.non2xx, errors: result.errors };
}

export interface RunContext {
  fleet: Fleet;
  clock: IngestClock;
  pool: pg.Pool;
  postmasterPid: number;
  warmupSec: number;
  durationSec: number;
}

/** One run of a variant against one server: warm-up, then the measured period with CPU, RSS and integrity. */
export async function runVariant(variant: Variant, server: ServerProcess, target: Target, round: number, context: RunContext): Promise<RunResult> {
  const start = (durationSec: number) =>
    variant.loads.map((load) => {
      const workload = load.workload(context.fleet, context.clock);
      return { load, workload, done: fire(server.url, load, workload, durationSec) };
    });

  await Promise.all(start(context.warmupSec).map((run) => run.done));
  await new Promise((resolve) => setTimeout(resolve, variant.countTransactions ? STATS_SETTLE_MS : 500));
  const transactionsBefore = variant.countTransactions ? await transactionCount(context.pool) : 0;

  const hwmReset = resetPeakRss(server.pid);
  let sampledRssKb = rssKb(server.pid);
  const sampler = setInterval(() => {
    sampledRssKb = Math.max(sampledRssKb, rssKb(server.pid));
  }, 200);
  const serverCpu = processCpuUs(server.pid);
  const postgresCpu = postgresCpuUs(context.postmasterPid);
  const ownCpu = process.cpuUsage();
  const machineCpu = machineBusyUs();
  const began = process.hrtime.bigint();

  const runs = start(context.durationSec);
  const results = await Promise.all(runs.map((run) => run.done));

  const serverCpuUs = processCpuUs(server.pid) - serverCpu;
  const postgresCpuUs_ = postgresCpuUs(context.postmasterPid) - postgresCpu;
  const ownCpuDelta = process.cpuUsage(ownCpu);
  const machineCpuUs = machineBusyUs() - machineCpu;
  const elapsedUs = Number(process.hrtime.bigint() - began) / 1000;
  const otherCpuUs = machineCpuUs - serverCpuUs - postgresCpuUs_ - ownCpuDelta.user - ownCpuDelta.system;
  clearInterval(sampler);
  const peakKb = hwmReset ? peakRssKb(server.pid) : Math.max(sampledRssKb, rssKb(server.pid));

  let transactions: number | undefined;
  if (variant.countTransactions) {
    await new Promise((resolve) => setTimeout(resolve, STATS_SETTLE_MS));
    // Minus the orchestrator's own two reads.
    transactions = (await transactionCount(context.pool)) - transactionsBefore - 2;
  }

  const loads: LoadResult[] = [];
  for (const [index, run] of runs.entries()) {
    const result = results[index];
    loads.push({
      name: run.load.name,
      requests: result.requests,
      rps: result.requests / result.durationSec,
      p50Ms: result.p50Ms,
      p99Ms: result.p99Ms,
      non2xx: result.non2xx - (run.workload.notModified?.() ?? 0),
      notModified: run.workload.notModified?.() ?? 0,
      errors: result.errors,
      unexpectedBodies: run.workload.unexpectedBodies(),
      integrity: run.workload.settle ? await run.workload.settle(context.pool) : undefined,
    });
  }
  const requests = Math.max(1, loads.reduce((sum, load) => sum + load.requests, 0));
  return {
    variant: variant.id,
    target,
    round,
    loads,
    serverCpuUsPerRequest: serverCpuUs / requests,
    postgresCpuUsPerRequest: postgresCpuUs_ / requests,
    loadGeneratorCpuUsPerRequest: (ownCpuDelta.user + ownCpuDelta.system) / requests,
    peakRssMb: peakKb / 1024,
    otherCpuShare: Math.max(0, otherCpuUs) / (elapsedUs * cpus().length),
    postgresTransactionsPerRequest: transactions === undefined ? undefined : Math.max(0, transactions) / requests,
  };
}
