/**
 * `npm run bench -- --soak 10m`: the service alone under a fixed mix of every kind of traffic for a
 * long time, with RSS, event-loop delay, latency and errors per interval, to see what drifts.
 */
import autocannon from 'autocannon';
import { cpus } from 'node:os';
import type pg from 'pg';
import { machineBusyUs, peakRssKb, postgresCpuUs, processCpuUs, resetPeakRss, rssKb } from './proc-stats.js';
import { dataText, int, machineText, median, ms, pct, startCommandOf, type RunInfo } from './report.js';
import type { LoadSpec } from './scenarios.js';
import type { ServerProcess } from './servers.js';
import { customerLoginWorkload, deviceLoginWorkload, historyWorkload, ingestWorkload, pollWorkload, type Fleet, type IngestClock, type Integrity, type Workload } from './workloads.js';

const HOUR = 3_600_000;

const KINDS = ['ingest 1', 'ingest 50', 'poll', 'history', 'device login', 'customer login'] as const;
type Kind = (typeof KINDS)[number];

interface SoakStream extends LoadSpec {
  name: Kind;
  /** Fixed: every interval carries the same work, so a drift shows as one. At most one connection per request/s (autocannon gives a connection with rate 0 no limit). */
  overallRate: number;
}

/** Even-indexed devices send single records, odd-indexed ones 50-record batches: the two integrity checks stay apart. */
const half = (fleet: Fleet, parity: 0 | 1) => fleet.devices.filter((device) => device.index % 2 === parity).map((device) => device.index);

/**
 * About half of what this 2-vCPU machine sustains with the load generator on it (S1 ~2,100 req/s,
 * S2 ~380, S4 ~6,900): busy, not saturated, so latencies measure the service rather than a queue.
 */
export const SOAK_MIX: SoakStream[] = [
  { name: 'ingest 1', connections: 50, overallRate: 500, workload: (fleet, clock) => ingestWorkload(fleet, clock, 1, half(fleet, 0)) },
  { name: 'ingest 50', connections: 10, overallRate: 20, workload: (fleet, clock) => ingestWorkload(fleet, clock, 50, half(fleet, 1)) },
  { name: 'poll', connections: 50, overallRate: 1000, workload: (fleet) => pollWorkload(fleet) },
  { name: 'history', connections: 2, overallRate: 4, workload: (fleet) => historyWorkload(fleet, 24 * HOUR) },
  { name: 'history', connections: 2, overallRate: 2, workload: (fleet) => historyWorkload(fleet, 7 * 24 * HOUR) },
  { name: 'history', connections: 1, overallRate: 1, workload: (fleet) => historyWorkload(fleet, 30 * 24 * HOUR) },
  { name: 'device login', connections: 1, overallRate: 5, workload: (fleet) => deviceLoginWorkload(fleet) },
  { name: 'customer login', connections: 1, overallRate: 1, workload: (fleet) => customerLoginWorkload(fleet) },
];

/** A minute per figure, or a tenth of the soak when it is shorter than 10 minutes. */
export function soakIntervalMs(durationSec: number): number {
  return durationSec >= 600 ? 60_000 : durationSec * 100;
}

/** The service's `{"msg":"event loop",…}` lines (EVENT_LOOP_LOG_MS), one per window since it started listening. */
export class EventLoopLog {
  readonly windows: Array<{ p50: number; p99: number; max: number }> = [];

  take(line: string): void {
    if (!line.includes('"event loop"')) return;
    try {
      const parsed = JSON.parse(line) as { msg?: unknown; p50?: unknown; p99?: unknown; max?: unknown };
      if (parsed.msg === 'event loop') this.windows.push({ p50: Number(parsed.p50), p99: Number(parsed.p99), max: Number(parsed.max) });
    } catch {
      // some other line that happens to say "event loop"
    }
  }
}

interface KindFigures {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers outside 2xx, except the 304s polls ask for. */
  non2xx: number;
  notModified: number;
  connectionErrors: number;
  timeouts: number;
  /** 2xx whose body was not what the workload expects. */
  unexpectedBodies: number;
}

export interface SoakInterval {
  index: number;
  /** End of the interval, seconds since the traffic started. */
  endSec: number;
  seconds: number;
  /** Median of the service's VmRSS sampled every second: steadier than one reading against the GC's sawtooth. */
  rssMb: number;
  peakRssMb: number;
  /** The service's own window of the same length (started when it began listening, just before the traffic). */
  eventLoop?: { p50: number; p99: number; max: number };
  /** CPU of the service's process and of PostgreSQL, as a share of one core. */
  serviceCpu: number;
  postgresCpu: number;
  /** CPU used by anything else (not service, PostgreSQL or load generator), as a share of the machine. */
  otherCpu: number;
  kinds: Record<Kind, KindFigures>;
}

export interface SoakResult {
  durationSec: number;
  intervalSec: number;
  intervals: SoakInterval[];
  /** One per ingest stream; absent while the soak runs. */
  integrity?: Array<{ kind: Kind; check: Integrity }>;
}

export interface SoakContext {
  service: ServerProcess;
  eventLoop: EventLoopLog;
  fleet: Fleet;
  clock: IngestClock;
  pool: pg.Pool;
  postmasterPid: number;
  durationSec: number;
  log: (message: string) => void;
  onInterval: (interval: SoakInterval) => void;
}

class Bucket {
  latencies: number[] = [];
  non2xx = 0;
  notModified = 0;
  connectionErrors = 0;
  timeouts = 0;
}

const errorsOf = (figures: KindFigures) => figures.non2xx + figures.connectionErrors + figures.timeouts + figures.unexpectedBodies;
const intervalErrors = (interval: SoakInterval) => KINDS.reduce((sum, kind) => sum + errorsOf(interval.kinds[kind]), 0);
const intervalRequests = (interval: SoakInterval) => KINDS.reduce((sum, kind) => sum + interval.kinds[kind].requests, 0);
const clockText = (seconds: number) => `${Math.floor(seconds / 60)}:${String(Math.round(seconds % 60)).padStart(2, '0')}`;

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function figuresOf(bucket: Bucket, unexpectedBodies: number): KindFigures {
  const values = bucket.latencies.sort((a, b) => a - b);
  return {
    requests: values.length,
    p50Ms: percentile(values, 50),
    p99Ms: percentile(values, 99),
    maxMs: values.length ? values[values.length - 1] : Number.NaN,
    non2xx: bucket.non2xx,
    notModified: bucket.notModified,
    connectionErrors: bucket.connectionErrors,
    timeouts: bucket.timeouts,
    unexpectedBodies,
  };
}

interface CpuSnapshot {
  at: bigint;
  service: number;
  postgres: number;
  own: number;
  machine: number;
}

function cpuSnapshot(servicePid: number, postmasterPid: number): CpuSnapshot {
  const own = process.cpuUsage();
  return { at: process.hrtime.bigint(), service: processCpuUs(servicePid), postgres: postgresCpuUs(postmasterPid), own: own.user + own.system, machine: machineBusyUs() };
}

const sleep = (ms_: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms_)));

/** Runs the mix for the whole duration, closing an interval every soakIntervalMs, then checks stored = acknowledged. */
export async function runSoak(context: SoakContext): Promise<SoakResult> {
  const { service, durationSec } = context;
  const intervalMs = soakIntervalMs(durationSec);
  const count = Math.ceil((durationSec * 1000) / intervalMs);
  let buckets = new Map<Kind, Bucket>(KINDS.map((kind) => [kind, new Bucket()]));

  const streams = SOAK_MIX.map((spec) => {
    const workload: Workload = spec.workload(context.fleet, context.clock);
    let instance: autocannon.Instance | undefined;
    const done = new Promise<autocannon.Result>((resolve, reject) => {
      instance = autocannon(
        { url: service.url, connections: spec.connections, overallRate: spec.overallRate, duration: durationSec, timeout: 10, requests: [workload.request] },
        (error: unknown, result) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(result)),
      );
    });
    instance?.on('response', (_client, status, _bytes, responseTime) => {
      const bucket = buckets.get(spec.name)!;
      bucket.latencies.push(responseTime);
      if (status === 304 && spec.name === 'poll') bucket.notModified += 1;
      else if (status < 200 || status >= 300) bucket.non2xx += 1;
    });
    instance?.on('reqError', (error: unknown) => {
      const bucket = buckets.get(spec.name)!;
      // autocannon reports a timeout as this error.
      if (error instanceof Error && error.message === 'request timed out') bucket.timeouts += 1;
      else bucket.connectionErrors += 1;
    });
    return { spec, workload, done };
  });
  const began = Date.now();
  const allDone = Promise.all(streams.map((stream) => stream.done));
  // Awaited after the last interval; until then a failure must not count as unhandled.
  allDone.catch(() => undefined);

  const unexpectedSoFar = () => new Map(KINDS.map((kind) => [kind, streams.filter((stream) => stream.spec.name === kind).reduce((sum, stream) => sum + stream.workload.unexpectedBodies(), 0)]));
  let unexpectedBefore = unexpectedSoFar();
  let cpuBefore = cpuSnapshot(service.pid, context.postmasterPid);
  const peakExact = resetPeakRss(service.pid);
  let rssSamplesKb: number[] = [];
  const sampler = setInterval(() => rssSamplesKb.push(rssKb(service.pid)), 1000);
  const intervals: SoakInterval[] = [];

  try {
    for (let index = 1; index <= count; index++) {
      if (index < count) await sleep(began + index * intervalMs - Date.now());
      else await allDone;
      const closed = buckets;
      buckets = new Map(KINDS.map((kind) => [kind, new Bucket()]));
      const unexpectedNow = unexpectedSoFar();
      const cpuNow = cpuSnapshot(service.pid, context.postmasterPid);
      const elapsedUs = Number(cpuNow.at - cpuBefore.at) / 1000;
      const samplesKb = [...rssSamplesKb, rssKb(service.pid)];
      rssSamplesKb = [];
      const peakKb = peakExact ? peakRssKb(service.pid) : Math.max(...samplesKb);
      if (peakExact) resetPeakRss(service.pid);
      const serviceUs = cpuNow.service - cpuBefore.service;
      const postgresUs = cpuNow.postgres - cpuBefore.postgres;
      const otherUs = cpuNow.machine - cpuBefore.machine - serviceUs - postgresUs - (cpuNow.own - cpuBefore.own);
      const kinds = Object.fromEntries(KINDS.map((kind) => [kind, figuresOf(closed.get(kind)!, unexpectedNow.get(kind)! - unexpectedBefore.get(kind)!)])) as Record<Kind, KindFigures>;
      const interval: SoakInterval = {
        index,
        endSec: (Date.now() - began) / 1000,
        seconds: elapsedUs / 1e6,
        rssMb: median(samplesKb) / 1024,
        peakRssMb: peakKb / 1024,
        serviceCpu: serviceUs / elapsedUs,
        postgresCpu: postgresUs / elapsedUs,
        otherCpu: Math.max(0, otherUs) / (elapsedUs * cpus().length),
        kinds,
      };
      unexpectedBefore = unexpectedNow;
      cpuBefore = cpuNow;
      // The service's window ends a little before this one (it started listening just before the
      // traffic) unless its event loop is late: give the line a moment; the next interval's clock runs on.
      for (let waited = 0; context.eventLoop.windows.length < index && waited < 2000; waited += 100) await sleep(100);
      interval.eventLoop = context.eventLoop.windows[index - 1];
      intervals.push(interval);
      context.onInterval(interval);
      context.log(intervalLine(interval, durationSec));
    }
  } finally {
    clearInterval(sampler);
  }
  for (const interval of intervals) interval.eventLoop ??= context.eventLoop.windows[interval.index - 1];

  const integrity: Array<{ kind: Kind; check: Integrity }> = [];
  for (const stream of streams) {
    if (stream.workload.settle) integrity.push({ kind: stream.spec.name, check: await stream.workload.settle(context.pool) });
  }
  return { durationSec, intervalSec: intervalMs / 1000, intervals, integrity };
}

function intervalLine(interval: SoakInterval, durationSec: number): string {
  const loop = interval.eventLoop ? `p50 ${ms(interval.eventLoop.p50)} p99 ${ms(interval.eventLoop.p99)} max ${ms(interval.eventLoop.max)} ms` : '–';
  const p99s = KINDS.map((kind) => `${kind} ${ms(interval.kinds[kind].p99Ms)}`).join(', ');
  return (
    `[soak ${clockText(interval.endSec)} of ${clockText(durationSec)}] RSS median ${int(interval.rssMb)} MB (peak ${int(interval.peakRssMb)}); event loop ${loop}; ` +
    `${int(intervalRequests(interval) / interval.seconds)} req/s, ${intervalErrors(interval)} errors; p99 ms: ${p99s}; ` +
    `CPU service ${pct(interval.serviceCpu)} PostgreSQL ${pct(interval.postgresCpu)} (of one core), other ${pct(interval.otherCpu)} (of the machine)`
  );
}

/** Growth of the median VmRSS from the first to the last third of the intervals after the first (warm-up). */
export function rssGrowth(intervals: SoakInterval[]): { first: number; last: number; growth: number; firstRange: string; lastRange: string } | undefined {
  const after = intervals.slice(1);
  const third = Math.floor(after.length / 3);
  if (third < 1) return undefined;
  const firstPart = after.slice(0, third);
  const lastPart = after.slice(-third);
  const range = (part: SoakInterval[]) => `${part[0].index}–${part[part.length - 1].index}`;
  const first = median(firstPart.map((interval) => interval.rssMb));
  const last = median(lastPart.map((interval) => interval.rssMb));
  return { first, last, growth: last / first - 1, firstRange: range(firstPart), lastRange: range(lastPart) };
}

const RSS_GROWTH_LIMIT = 0.1;

function verdict(result: SoakResult): string[] {
  const lines: string[] = [];
  const growth = rssGrowth(result.intervals);
  if (growth) {
    const text = `${growth.growth >= 0 ? '+' : ''}${(growth.growth * 100).toFixed(1)} % (median VmRSS ${int(growth.first)} MB over intervals ${growth.firstRange}, ${int(growth.last)} MB over intervals ${growth.lastRange}; interval 1 is warm-up)`;
    lines.push(growth.growth > RSS_GROWTH_LIMIT ? `- **RSS growth: ${text}: above 10 %**` : `- RSS growth: ${text}: within 10 %`);
  } else {
    lines.push('- RSS growth: too few intervals to tell');
  }
  const total = (pick: (figures: KindFigures) => number) => result.intervals.reduce((sum, interval) => sum + KINDS.reduce((s, kind) => s + pick(interval.kinds[kind]), 0), 0);
  const errors = total(errorsOf);
  const detail = `non-2xx other than the polls' 304s ${total((f) => f.non2xx)}, connection errors ${total((f) => f.connectionErrors)}, timeouts ${total((f) => f.timeouts)}, unexpected 2xx bodies ${total((f) => f.unexpectedBodies)}`;
  lines.push(errors === 0 ? `- errors: 0 (${detail})` : `- **errors: ${errors}** (${detail})`);
  if (result.integrity) {
    const ok = result.integrity.every((item) => item.check.ok);
    const each = result.integrity
      .map(
        ({ kind, check }) =>
          `${kind}: ${int(check.stored)} stored = ${int(check.acknowledged)} acknowledged + ${int(check.committedUnanswered)} committed but cut off at stop${check.duplicates || check.rejected ? `, ${check.duplicates} duplicates, ${check.rejected} rejected` : ''}`,
      )
      .join('; ');
    lines.push(ok ? `- stored = acknowledged: yes (${each})` : `- **stored = acknowledged: NO** (${each})`);
  }
  return lines;
}

function kindTotals(result: SoakResult): string[] {
  const lines = [
    '| traffic | rate asked, req/s | answered, req/s | connections | requests | errors | 304 | p99 ms, median of intervals | p99 ms, worst interval | max ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const seconds = result.intervals.reduce((total, interval) => total + interval.seconds, 0);
  for (const kind of KINDS) {
    const streams = SOAK_MIX.filter((stream) => stream.name === kind);
    const figures = result.intervals.map((interval) => interval.kinds[kind]);
    const sum = (pick: (f: KindFigures) => number) => figures.reduce((total, f) => total + pick(f), 0);
    const p99s = figures.map((f) => f.p99Ms).filter(Number.isFinite);
    lines.push(
      `| ${kind} | ${int(streams.reduce((total, stream) => total + stream.overallRate, 0))} | ${int(sum((f) => f.requests) / seconds)} | ${streams.reduce((total, stream) => total + stream.connections, 0)} | ${int(sum((f) => f.requests))} | ${sum(errorsOf)} | ${kind === 'poll' ? `${int(sum((f) => f.notModified))} (${pct(sum((f) => f.notModified) / Math.max(1, sum((f) => f.requests)))})` : '–'} | ${ms(median(p99s))} | ${ms(Math.max(...p99s))} | ${ms(Math.max(...figures.map((f) => f.maxMs).filter(Number.isFinite)))} |`,
    );
  }
  return lines;
}

function overTime(result: SoakResult): string[] {
  const lines = [
    '| at | RSS MB (median) | peak RSS MB | event loop p50 / p99 / max ms | req/s | errors | service CPU (one core) | PostgreSQL CPU (one core) | other CPU (machine) |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const interval of result.intervals) {
    const loop = interval.eventLoop ? `${ms(interval.eventLoop.p50)} / ${ms(interval.eventLoop.p99)} / ${ms(interval.eventLoop.max)}` : '–';
    lines.push(
      `| ${clockText(interval.endSec)} | ${int(interval.rssMb)} | ${int(interval.peakRssMb)} | ${loop} | ${int(intervalRequests(interval) / interval.seconds)} | ${intervalErrors(interval)} | ${pct(interval.serviceCpu)} | ${pct(interval.postgresCpu)} | ${pct(interval.otherCpu)} |`,
    );
  }
  return lines;
}

function perKind(result: SoakResult, cell: (figures: KindFigures, interval: SoakInterval) => string): string[] {
  const lines = [`| at | ${KINDS.join(' | ')} |`, `| ---: | ${KINDS.map(() => '---:').join(' | ')} |`];
  for (const interval of result.intervals) lines.push(`| ${clockText(interval.endSec)} | ${KINDS.map((kind) => cell(interval.kinds[kind], interval)).join(' | ')} |`);
  return lines;
}

export function renderSoakReport(info: RunInfo, result: SoakResult, incomplete?: string): string {
  const minutes = Math.round((info.finishedAt.getTime() - info.startedAt.getTime()) / 6000) / 10;
  const disturbed = result.intervals.filter((interval) => interval.otherCpu > 0.05);
  return [
    `# Soak run ${info.startedAt.toISOString()}`,
    '',
    ...(incomplete ? [`> **Incomplete soak** (${incomplete}): ${result.intervals.length} intervals finished.`, ''] : []),
    `- Machine: ${machineText(info)}. Load generator, service and PostgreSQL share the CPUs.`,
    `- Run: profile ${info.options.profile}, the service alone, ${clockText(result.durationSec)} of mixed traffic at fixed rates, figures every ${result.intervalSec} s; ${minutes} min in all.`,
    `- Data: ${dataText(info.seed)}`,
    `- Service: pool of ${info.poolSize} connections, ${startCommandOf(info)}, NODE_ENV=production, LOG_LEVEL=warn; event-loop delay from its own monitorEventLoopDelay (EVENT_LOOP_LOG_MS=${result.intervalSec * 1000}). Latencies are of answered requests, per interval.`,
    disturbed.length === 0
      ? `- Other processes used at most ${pct(Math.max(0, ...result.intervals.map((interval) => interval.otherCpu)))} of the CPUs in any interval.`
      : `- **Warning:** in ${disturbed.length} of ${result.intervals.length} intervals other processes used more than 5 % of the CPUs (up to ${pct(Math.max(...disturbed.map((interval) => interval.otherCpu)))}); those figures are disturbed.`,
    '',
    '## Verdict',
    '',
    ...verdict(result),
    '',
    '## Traffic',
    '',
    ...kindTotals(result),
    '',
    '## Over time',
    '',
    ...overTime(result),
    '',
    '### p99 latency ms per interval',
    '',
    ...perKind(result, (figures) => ms(figures.p99Ms)),
    '',
    '### Requests / errors per interval',
    '',
    ...perKind(result, (figures) => `${int(figures.requests)} / ${errorsOf(figures)}`),
    '',
  ].join('\n');
}
