import autocannon from 'autocannon';
import type pg from 'pg';
import { cpus } from 'node:os';
import { machineBusyUs, peakRssKb, postgresCpuUs, processCpuUs, resetPeakRss, rssKb } from './proc-stats.js';
import type { LoadSpec, Variant } from './scenarios.js';
import { firePaced, type LoadOutcome } from './paced.js';
import type { ServerProcess } from './servers.js';
import { LongPollClient, type LongPollStats } from './long-poll-load.js';
import { StreamClient, type StreamStats } from './stream-load.js';
import { gatewayFleetOf, liveFleetOf, type Fleet, type IngestClock, type Integrity, type SentRecords, type Workload } from './workloads.js';

/**
 * The servers a variant runs against: the hand-written baseline, the service as configured for
 * production (alerting on, the fleet default rules on every device, battery analytics on) and, for
 * S1 and S2 only, a second service process that differs by ALERTS_ENABLED=false and a third that
 * differs by BATTERY_ANALYTICS_ENABLED=false. 'service-streams' (S6) is the
 * first service with the variant's stream subscribers connected; 'service-long-polls' (S9) the
 * first service with the 1,000 gateways holding long polls of their commands.
 */
export type Target = 'baseline' | 'service' | 'service-alerts-off' | 'service-batteries-off' | 'service-streams' | 'service-long-polls';

/** What alert evaluation did during an ingest run against a service (both services report it; alerting off must show none). */
export interface AlertingActivity {
  /** The records the ingest loads sent during the measured run, and how many breach a default rule's threshold. */
  sent: SentRecords;
  /** Alerts opened and resolved from the start of the measured run until the service was quiet again. */
  opened: number;
  resolved: number;
  /** Series in progress (a breach running or an alert open) once the service was quiet. */
  seriesAtEnd: number;
  /** Flushes the service logged as not evaluated (its evaluation queue full) or failed, in the same span. */
  skippedFlushes: number;
  failedFlushes: number;
}

/** Counts of the service's log lines about alert evaluation, so far (run.ts counts them on its stdout). */
export interface AlertLogCounts {
  skipped: number;
  failed: number;
}

/** The work a server finished after the load stopped (deferred work such as alert evaluation, requests in flight). */
export interface AfterLoad {
  /** Seconds from the end of the load until the server's CPU fell below 5 % of a core for a whole second (at most 180 s). */
  seconds: number;
  quiet: boolean;
  /** CPU the server and PostgreSQL used in that time, µs per request of the measured run. */
  serverCpuUsPerRequest: number;
  postgresCpuUsPerRequest: number;
}

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
  /** Ingest: records acknowledged per second of the measured run. */
  recordsPerSec?: number;
}

/** S6: what the stream client saw, and the CPU it used per request of the run. */
export interface StreamRunResult extends StreamStats {
  clientCpuUsPerRequest: number;
  /** The server's VmRSS, MB, just before the client opened its streams (the server quiet) and just after (before the warm-up). */
  rssBeforeOpenMb: number;
  rssAfterOpenMb: number;
}

/** S9: what the long-poll client saw, the CPU it used per request of the run, and the service's RSS for the polls it holds. */
export interface LongPollRunResult extends LongPollStats {
  clientCpuUsPerRequest: number;
  /** Gateways holding a long poll once the client had opened them, when the RSS while they wait was read. */
  heldAtOpen: number;
  /** The server's VmRSS, MB, just before the client opened its polls (the server quiet), and while they wait (the server quiet again, before the warm-up: the most of 5 readings over a second). */
  rssBeforeOpenMb: number;
  rssWaitingMb: number;
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
   * bench's servers, PostgreSQL and the load generator: anything else running on the machine.
   * Above a few percent the run was disturbed. (Before the alerting comparison added a third
   * server, this share included the idle other server.)
   */
  otherCpuShare: number;
  /** Share of the machine's CPU capacity the bench's other servers used while idle during the measured run (job polling, timers). */
  idleServersCpuShare: number;
  /** PostgreSQL transactions committed or rolled back per completed request (variants that count them). */
  postgresTransactionsPerRequest?: number;
  /** What the server still did once the load stopped; the next run starts only after it. */
  afterLoad: AfterLoad;
  /** Ingest variants against a service: alert evaluation during the run. */
  alerting?: AlertingActivity;
  /** S6 (with and without subscribers): the stream client's figures. */
  streams?: StreamRunResult;
  /** S9, the run with the long polls: the long-poll client's figures. */
  longPolls?: LongPollRunResult;
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
  /** Every server the bench started: those not measured in a run sit idle during it, and their CPU is counted apart. */
  serverPids: number[];
}

const QUIET_SAMPLE_MS = 250;
/** Quiet: the server used less than this share of one core in each of QUIET_SAMPLES samples in a row. */
const QUIET_CPU_SHARE = 0.05;
const QUIET_SAMPLES = 4;
export const QUIET_MAX_MS = 180_000;

/**
 * Waits until the server's CPU falls quiet after a run, so work it deferred (alert evaluation of
 * the last flushes, requests cut off at the stop) is done before the next run starts on another
 * server, and is not counted as that run's "other CPU" or PostgreSQL CPU.
 */
async function waitQuiet(pid: number, since: bigint): Promise<{ seconds: number; quiet: boolean }> {
  let quietSamples = 0;
  let last = processCpuUs(pid);
  let lastAt = process.hrtime.bigint();
  while (Number(process.hrtime.bigint() - since) / 1e6 < QUIET_MAX_MS) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_SAMPLE_MS));
    const now = process.hrtime.bigint();
    const cpu = processCpuUs(pid);
    const share = (cpu - last) / (Number(now - lastAt) / 1000);
    last = cpu;
    lastAt = now;
    quietSamples = share < QUIET_CPU_SHARE ? quietSamples + 1 : 0;
    // The quiet second itself is not part of the tail.
    if (quietSamples >= QUIET_SAMPLES) return { seconds: Math.max(0, Number(now - since) / 1e9 - (QUIET_SAMPLES * QUIET_SAMPLE_MS) / 1000), quiet: true };
  }
  return { seconds: QUIET_MAX_MS / 1000, quiet: false };
}

async function alertCounts(pool: pg.Pool): Promise<{ opened: number; resolved: number; series: number }> {
  const { rows } = await pool.query<{ opened: number; resolved: number; series: number }>(
    'SELECT (SELECT count(*)::int FROM alerts) AS opened, (SELECT count(*)::int FROM alerts WHERE resolved_at IS NOT NULL) AS resolved, (SELECT count(*)::int FROM alert_series) AS series',
  );
  return rows[0];
}

/**
 * One run of a variant against one server: warm-up, then the measured period with CPU, RSS and
 * integrity. S6: the stream client opens its streams (target 'service-streams'; none for 'service')
 * and starts its probes before the warm-up, and closes the streams once the server is quiet. S9
 * (target 'service-long-polls'): the long-poll client opens its polls, the server's RSS is read
 * before and while they wait, the commands start with the warm-up; once the server is quiet the
 * polls are dropped and the run waits until the service is quiet again (it let them go).
 */
export async function runVariant(variant: Variant, server: ServerProcess, target: Target, round: number, context: RunContext, alertLog?: () => AlertLogCounts): Promise<RunResult> {
  let streams: StreamClientRun | undefined;
  let longPolls: LongPollClientRun | undefined;
  try {
    if (variant.streams) {
      const rssBeforeOpenMb = rssKb(server.pid) / 1024;
      const { client } = await StreamClient.start(server.url, liveFleetOf(context.fleet), variant.streams, target === 'service-streams');
      streams = { client, rssBeforeOpenMb, rssAfterOpenMb: rssKb(server.pid) / 1024 };
    }
    if (variant.longPolls && target === 'service-long-polls') {
      const rssBeforeOpenMb = rssKb(server.pid) / 1024;
      const { client, held } = await LongPollClient.start(server.url, gatewayFleetOf(context.fleet), variant.longPolls);
      longPolls = { client, heldAtOpen: held, rssBeforeOpenMb, rssWaitingMb: 0 };
      // The service has answered the first polls and holds the long ones once it is quiet: its RSS while they wait.
      await waitQuiet(server.pid, process.hrtime.bigint());
      for (let reading = 0; reading < 5; reading++) {
        longPolls.rssWaitingMb = Math.max(longPolls.rssWaitingMb, rssKb(server.pid) / 1024);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      client.startSending();
    }
    return await measureRun(variant, server, target, round, context, streams, longPolls, alertLog);
  } finally {
    await streams?.client.close();
    if (longPolls) {
      await longPolls.client.close();
      // The service lets go of a poll whose client hung up: the next run (its RSS reading before opening, above all) starts once it has.
      await waitQuiet(server.pid, process.hrtime.bigint());
    }
  }
}

interface StreamClientRun {
  client: StreamClient;
  rssBeforeOpenMb: number;
  rssAfterOpenMb: number;
}

interface LongPollClientRun {
  client: LongPollClient;
  heldAtOpen: number;
  rssBeforeOpenMb: number;
  rssWaitingMb: number;
}

async function measureRun(
  variant: Variant,
  server: ServerProcess,
  target: Target,
  round: number,
  context: RunContext,
  streamRun: StreamClientRun | undefined,
  pollRun: LongPollClientRun | undefined,
  alertLog?: () => AlertLogCounts,
): Promise<RunResult> {
  const streamClient = streamRun?.client;
  const pollClient = pollRun?.client;
  // The bench's own helper processes (S6's stream client, S9's long-poll client): their CPU is counted apart.
  const clientPids = [streamClient?.pid, pollClient?.pid].filter((pid): pid is number => pid !== undefined);
  const clientCpuOf = () => clientPids.reduce((sum, pid) => sum + processCpuUs(pid), 0);
  const start = (durationSec: number) =>
    variant.loads.map((load) => {
      const workload = load.workload(context.fleet, context.clock);
      return { load, workload, done: fire(server.url, load, workload, durationSec) };
    });

  await Promise.all(start(context.warmupSec).map((run) => run.done));
  await new Promise((resolve) => setTimeout(resolve, variant.countTransactions ? STATS_SETTLE_MS : 500));
  const transactionsBefore = variant.countTransactions ? await transactionCount(context.pool) : 0;
  const watchAlerts = target !== 'baseline' && variant.loads.some((load) => load.ingest === true);
  const alertsBefore = watchAlerts ? await alertCounts(context.pool) : undefined;
  const alertLogBefore = alertLog?.();

  const hwmReset = resetPeakRss(server.pid);
  let sampledRssKb = rssKb(server.pid);
  const sampler = setInterval(() => {
    sampledRssKb = Math.max(sampledRssKb, rssKb(server.pid));
  }, 200);
  const idlePids = context.serverPids.filter((pid) => pid !== server.pid);
  const idleCpuOf = () => idlePids.reduce((sum, pid) => sum + processCpuUs(pid), 0);
  const idleCpu = idleCpuOf();
  const serverCpu = processCpuUs(server.pid);
  const postgresCpu = postgresCpuUs(context.postmasterPid);
  const ownCpu = process.cpuUsage();
  const machineCpu = machineBusyUs();
  const clientCpu = clientCpuOf();
  const began = process.hrtime.bigint();

  streamClient?.measure();
  pollClient?.measure();
  const runs = start(context.durationSec);
  const results = await Promise.all(runs.map((run) => run.done));
  const streamStats = streamClient?.stop();
  const pollStats = pollClient?.stop();
  // Awaited after the quiet wait below; a failure must not go unhandled meanwhile.
  streamStats?.catch(() => undefined);
  pollStats?.catch(() => undefined);

  const serverCpuUs = processCpuUs(server.pid) - serverCpu;
  const postgresCpuUs_ = postgresCpuUs(context.postmasterPid) - postgresCpu;
  const ownCpuDelta = process.cpuUsage(ownCpu);
  const machineCpuUs = machineBusyUs() - machineCpu;
  const idleCpuUs = idleCpuOf() - idleCpu;
  const clientCpuUs = clientCpuOf() - clientCpu;
  const elapsedUs = Number(process.hrtime.bigint() - began) / 1000;
  const otherCpuUs = machineCpuUs - serverCpuUs - postgresCpuUs_ - ownCpuDelta.user - ownCpuDelta.system - idleCpuUs - clientCpuUs;
  const loadEnded = process.hrtime.bigint();
  const tail = await waitQuiet(server.pid, loadEnded);
  const tailServerCpuUs = processCpuUs(server.pid) - serverCpu - serverCpuUs;
  const tailPostgresCpuUs = postgresCpuUs(context.postmasterPid) - postgresCpu - postgresCpuUs_;
  clearInterval(sampler);
  const peakKb = hwmReset ? peakRssKb(server.pid) : Math.max(sampledRssKb, rssKb(server.pid));
  const alertsAfter = watchAlerts ? await alertCounts(context.pool) : undefined;
  const alertLogAfter = alertLog?.();

  let transactions: number | undefined;
  if (variant.countTransactions) {
    await new Promise((resolve) => setTimeout(resolve, STATS_SETTLE_MS));
    // Minus the orchestrator's own two reads.
    transactions = (await transactionCount(context.pool)) - transactionsBefore - 2;
  }

  const loads: LoadResult[] = [];
  for (const [index, run] of runs.entries()) {
    const result = results[index];
    const integrity = run.workload.settle ? await run.workload.settle(context.pool) : undefined;
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
      integrity,
      recordsPerSec: integrity ? integrity.acknowledged / result.durationSec : undefined,
    });
  }
  const requests = Math.max(1, loads.reduce((sum, load) => sum + load.requests, 0));
  const streams = streamRun && streamStats ? { ...(await streamStats), clientCpuUsPerRequest: clientCpuUs / requests, rssBeforeOpenMb: streamRun.rssBeforeOpenMb, rssAfterOpenMb: streamRun.rssAfterOpenMb } : undefined;
  const longPolls = pollRun && pollStats
    ? { ...(await pollStats), clientCpuUsPerRequest: clientCpuUs / requests, heldAtOpen: pollRun.heldAtOpen, rssBeforeOpenMb: pollRun.rssBeforeOpenMb, rssWaitingMb: pollRun.rssWaitingMb }
    : undefined;
  let alerting: AlertingActivity | undefined;
  if (alertsBefore && alertsAfter) {
    const sent = runs.reduce<SentRecords>(
      (sum, run) => {
        const part = run.workload.sent?.();
        return part ? { records: sum.records + part.records, socBelow20: sum.socBelow20 + part.socBelow20, temperatureOutside: sum.temperatureOutside + part.temperatureOutside } : sum;
      },
      { records: 0, socBelow20: 0, temperatureOutside: 0 },
    );
    alerting = {
      sent,
      opened: alertsAfter.opened - alertsBefore.opened,
      resolved: alertsAfter.resolved - alertsBefore.resolved,
      seriesAtEnd: alertsAfter.series,
      skippedFlushes: (alertLogAfter?.skipped ?? 0) - (alertLogBefore?.skipped ?? 0),
      failedFlushes: (alertLogAfter?.failed ?? 0) - (alertLogBefore?.failed ?? 0),
    };
  }
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
    idleServersCpuShare: Math.max(0, idleCpuUs) / (elapsedUs * cpus().length),
    postgresTransactionsPerRequest: transactions === undefined ? undefined : Math.max(0, transactions) / requests,
    afterLoad: { seconds: tail.seconds, quiet: tail.quiet, serverCpuUsPerRequest: Math.max(0, tailServerCpuUs) / requests, postgresCpuUsPerRequest: Math.max(0, tailPostgresCpuUs) / requests },
    alerting,
    streams,
    longPolls,
  };
}
