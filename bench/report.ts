import { QUIET_MAX_MS, type AlertingActivity, type LongPollRunResult, type RunResult, type StreamRunResult, type Target } from './measure.js';
import { COMMAND_GRACE_MS } from './long-poll-load.js';
import type { BenchOptions } from './options.js';
import type { MachineInfo } from './proc-stats.js';
import type { Variant } from './scenarios.js';
import type { SeedInfo } from './seed.js';
import { PUSH_GRACE_MS, type StreamStats } from './stream-load.js';

export interface RunInfo {
  startedAt: Date;
  finishedAt: Date;
  options: BenchOptions;
  machine: MachineInfo;
  postgresVersion: string;
  poolSize: number;
  /** Node flags of the service (those of `npm start`). */
  serviceNodeFlags: string[];
  /** The `NAME=value` settings `npm start` puts before `node`. */
  serviceStartEnv: Record<string, string>;
  /** Settings of the service other than its defaults, given for the run (BENCH_HISTORY_CACHE_MB). */
  serviceSettings: Record<string, string>;
  seed: SeedInfo;
  /** Whether VmHWM could be reset per run (else peak RSS is sampled every 200 ms). */
  peakRssExact: boolean;
}

interface LoadAggregate {
  name: string;
  rps: number;
  /** Ingest: median records acknowledged per second. */
  recordsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  notModified: number;
  requests: number;
  errors: number;
  unexpectedBodies: number;
}

interface Aggregate {
  rounds: number;
  loads: LoadAggregate[];
  serverCpu: number;
  postgresCpu: number;
  loadGeneratorCpu: number;
  peakRssMb: number;
  /** Median over rounds, when counted. */
  postgresTransactionsPerRequest?: number;
  /** Medians over rounds of what the server did after the load stopped (bench/measure.ts, waitQuiet). */
  afterLoad: { seconds: number; serverCpu: number; postgresCpu: number; notQuiet: number };
  /** Summed over rounds (ingest variants against a service). */
  alerting?: AlertingActivity;
  /** S6: the stream client's figures over rounds. */
  streams?: StreamAggregate;
  /** S9: the long-poll client's figures over rounds. */
  longPolls?: LongPollAggregate;
  integrity?: { ok: boolean; acknowledged: number; stored: number; committedUnanswered: number; duplicates: number; rejected: number };
}

/** S6's stream client over rounds: medians of the per-round figures, sums of the counts, the worst of the rest (`streams`: the fewest open in a round). */
type StreamAggregate = Omit<StreamStats, 'refusals' | 'telemetryEvents'> & {
  clientCpu: number;
  /** Medians of the server's VmRSS just before and just after the streams opened (server quiet, before the warm-up). */
  rssBeforeOpenMb: number;
  rssAfterOpenMb: number;
};

function aggregateStreams(results: StreamRunResult[]): StreamAggregate | undefined {
  if (results.length === 0) return undefined;
  const sum = (pick: (result: StreamRunResult) => number) => results.reduce((total, result) => total + pick(result), 0);
  const mid = (pick: (result: StreamRunResult) => number) => median(results.map(pick));
  return {
    streams: Math.min(...results.map((result) => result.streams)),
    refused: sum((r) => r.refused),
    closedByServer: sum((r) => r.closedByServer),
    openSeconds: mid((r) => r.openSeconds),
    eventsPerSec: mid((r) => r.eventsPerSec),
    probes: sum((r) => r.probes),
    probesAcked: sum((r) => r.probesAcked),
    probeFailures: sum((r) => r.probeFailures),
    probeAnswerP50Ms: mid((r) => r.probeAnswerP50Ms),
    probeAnswerP99Ms: mid((r) => r.probeAnswerP99Ms),
    deliveriesExpected: sum((r) => r.deliveriesExpected),
    deliveriesReceived: sum((r) => r.deliveriesReceived),
    pushP50Ms: mid((r) => r.pushP50Ms),
    pushP99Ms: mid((r) => r.pushP99Ms),
    pushMaxMs: Math.max(...results.map((result) => result.pushMaxMs)),
    clientCpu: mid((r) => r.clientCpuUsPerRequest),
    rssBeforeOpenMb: mid((r) => r.rssBeforeOpenMb),
    rssAfterOpenMb: mid((r) => r.rssAfterOpenMb),
  };
}

/** S9's long-poll client over rounds: medians of the per-round figures (RSS growth included), sums of the counts, the worst of the rest (`held`: the fewest in a round). */
type LongPollAggregate = LongPollRunResult & { rssGrowthMb: number };

function aggregateLongPolls(results: LongPollRunResult[]): LongPollAggregate | undefined {
  if (results.length === 0) return undefined;
  const sum = (pick: (result: LongPollRunResult) => number) => results.reduce((total, result) => total + pick(result), 0);
  const mid = (pick: (result: LongPollRunResult) => number) => median(results.map(pick));
  return {
    held: Math.min(...results.map((result) => result.held)),
    heldAtOpen: Math.min(...results.map((result) => result.heldAtOpen)),
    openSeconds: mid((r) => r.openSeconds),
    openFailures: sum((r) => r.openFailures),
    commands: sum((r) => r.commands),
    sendFailures: sum((r) => r.sendFailures),
    sendP50Ms: mid((r) => r.sendP50Ms),
    sendP99Ms: mid((r) => r.sendP99Ms),
    deliveries: sum((r) => r.deliveries),
    deliveryP50Ms: mid((r) => r.deliveryP50Ms),
    deliveryP99Ms: mid((r) => r.deliveryP99Ms),
    deliveryMaxMs: Math.max(...results.map((result) => result.deliveryMaxMs)),
    answers: sum((r) => r.answers),
    answerP50Ms: mid((r) => r.answerP50Ms),
    answerP99Ms: mid((r) => r.answerP99Ms),
    answerMaxMs: Math.max(...results.map((result) => result.answerMaxMs)),
    polls200: sum((r) => r.polls200),
    polls304: sum((r) => r.polls304),
    pollErrors: sum((r) => r.pollErrors),
    early304: sum((r) => r.early304),
    resultFailures: sum((r) => r.resultFailures),
    clientCpuUsPerRequest: mid((r) => r.clientCpuUsPerRequest),
    rssBeforeOpenMb: mid((r) => r.rssBeforeOpenMb),
    rssWaitingMb: mid((r) => r.rssWaitingMb),
    rssGrowthMb: mid((r) => r.rssWaitingMb - r.rssBeforeOpenMb),
  };
}

function sumAlerting(activities: AlertingActivity[]): AlertingActivity | undefined {
  if (activities.length === 0) return undefined;
  const sum = (pick: (activity: AlertingActivity) => number) => activities.reduce((total, activity) => total + pick(activity), 0);
  return {
    sent: { records: sum((a) => a.sent.records), socBelow20: sum((a) => a.sent.socBelow20), temperatureOutside: sum((a) => a.sent.temperatureOutside) },
    opened: sum((a) => a.opened),
    resolved: sum((a) => a.resolved),
    seriesAtEnd: Math.max(...activities.map((a) => a.seriesAtEnd)),
    skippedFlushes: sum((a) => a.skippedFlushes),
    failedFlushes: sum((a) => a.failedFlushes),
  };
}

/** The service's start command as the report shows it: environment, node and its flags. */
export function startCommandOf(info: Pick<RunInfo, 'serviceNodeFlags' | 'serviceStartEnv'>): string {
  return [...Object.entries(info.serviceStartEnv).map(([name, value]) => `${name}=${value}`), 'node', ...info.serviceNodeFlags].join(' ');
}

export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function aggregate(runs: RunResult[]): Aggregate | undefined {
  if (runs.length === 0) return undefined;
  const loads = runs[0].loads.map((load, index) => {
    const of = (pick: (run: RunResult) => number) => runs.map(pick);
    return {
      name: load.name,
      rps: median(of((run) => run.loads[index].rps)),
      recordsPerSec: median(of((run) => run.loads[index].recordsPerSec ?? Number.NaN)),
      p50Ms: median(of((run) => run.loads[index].p50Ms)),
      p99Ms: median(of((run) => run.loads[index].p99Ms)),
      non2xx: of((run) => run.loads[index].non2xx).reduce((a, b) => a + b, 0),
      notModified: of((run) => run.loads[index].notModified ?? 0).reduce((a, b) => a + b, 0),
      requests: of((run) => run.loads[index].requests).reduce((a, b) => a + b, 0),
      errors: of((run) => run.loads[index].errors).reduce((a, b) => a + b, 0),
      unexpectedBodies: of((run) => run.loads[index].unexpectedBodies).reduce((a, b) => a + b, 0),
    };
  });
  const checks = runs.flatMap((run) => run.loads.flatMap((load) => (load.integrity ? [load.integrity] : [])));
  return {
    rounds: runs.length,
    loads,
    serverCpu: median(runs.map((run) => run.serverCpuUsPerRequest)),
    postgresCpu: median(runs.map((run) => run.postgresCpuUsPerRequest)),
    loadGeneratorCpu: median(runs.map((run) => run.loadGeneratorCpuUsPerRequest)),
    peakRssMb: Math.max(...runs.map((run) => run.peakRssMb)),
    postgresTransactionsPerRequest: runs[0].postgresTransactionsPerRequest === undefined ? undefined : median(runs.map((run) => run.postgresTransactionsPerRequest ?? NaN)),
    afterLoad: {
      seconds: median(runs.map((run) => run.afterLoad.seconds)),
      serverCpu: median(runs.map((run) => run.afterLoad.serverCpuUsPerRequest)),
      postgresCpu: median(runs.map((run) => run.afterLoad.postgresCpuUsPerRequest)),
      notQuiet: runs.filter((run) => !run.afterLoad.quiet).length,
    },
    alerting: sumAlerting(runs.flatMap((run) => (run.alerting ? [run.alerting] : []))),
    streams: aggregateStreams(runs.flatMap((run) => (run.streams ? [run.streams] : []))),
    longPolls: aggregateLongPolls(runs.flatMap((run) => (run.longPolls ? [run.longPolls] : []))),
    integrity:
      checks.length === 0
        ? undefined
        : {
            ok: checks.every((check) => check.ok),
            acknowledged: checks.reduce((sum, check) => sum + check.acknowledged, 0),
            stored: checks.reduce((sum, check) => sum + check.stored, 0),
            committedUnanswered: checks.reduce((sum, check) => sum + check.committedUnanswered, 0),
            duplicates: checks.reduce((sum, check) => sum + check.duplicates, 0),
            rejected: checks.reduce((sum, check) => sum + check.rejected, 0),
          },
  };
}

export const int = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–');
export const ms = (value: number) => (Number.isFinite(value) ? String(Math.round(value * 10) / 10) : '–');
export const pct = (share: number) => `${(share * 100).toFixed(1)} %`;
const ratio = (service: number | undefined, baseline: number | undefined) =>
  service !== undefined && baseline !== undefined && Number.isFinite(service) && Number.isFinite(baseline) && baseline !== 0 ? (service / baseline).toFixed(2) : '–';

function integrityText(aggregate: Aggregate | undefined): string {
  const check = aggregate?.integrity;
  if (!check) return '–';
  const detail = `${int(check.stored)} stored = ${int(check.acknowledged)} acknowledged + ${int(check.committedUnanswered)} committed but cut off at stop`;
  return `${check.ok ? 'yes' : '**NO**'}: ${detail}${check.duplicates || check.rejected ? `; ${check.duplicates} duplicates, ${check.rejected} rejected` : ''}`;
}

export interface VariantSummary {
  variant: Variant;
  baseline?: Aggregate;
  /** The service as in production: alerting on, the fleet default rules on every device. */
  service?: Aggregate;
  /** S1 and S2: the same service with ALERTS_ENABLED=false. */
  alertsOff?: Aggregate;
  /** S1 and S2: the same service with BATTERY_ANALYTICS_ENABLED=false. */
  batteriesOff?: Aggregate;
  /** S6: the service with the stream subscribers connected (`service` is then the same without). */
  streams?: Aggregate;
  /** S9: the service with the 1,000 gateways holding long polls (`service` is then the same without). */
  longPolls?: Aggregate;
}

export function summarize(variants: Variant[], runs: RunResult[]): VariantSummary[] {
  const of = (variant: Variant, target: Target) => aggregate(runs.filter((run) => run.variant === variant.id && run.target === target));
  return variants.map((variant) => ({
    variant,
    baseline: of(variant, 'baseline'),
    service: of(variant, 'service'),
    alertsOff: of(variant, 'service-alerts-off'),
    batteriesOff: of(variant, 'service-batteries-off'),
    streams: of(variant, 'service-streams'),
    longPolls: of(variant, 'service-long-polls'),
  }));
}

const share = (part: number, whole: number) => (whole > 0 ? pct(part / whole) : '–');

/**
 * S1 and S2: the service as in production against the same service with one feature off
 * (ALERTS_ENABLED=false or BATTERY_ANALYTICS_ENABLED=false), measured in the same rounds. The
 * ratios are on ÷ off: throughput ≥ 0.95 is the target; above 1 for latency and CPU is what the
 * feature costs.
 */
function onOffTable(summary: VariantSummary, feature: 'alerting' | 'battery analytics'): string | undefined {
  const on = summary.service;
  const off = feature === 'alerting' ? summary.alertsOff : summary.batteriesOff;
  if (!on || !off) return undefined;
  const rows: string[] = [];
  const row = (label: string, a: string, b: string, r = '') => rows.push(`| ${label} | ${a} | ${b} | ${r} |`);
  on.loads.forEach((load, index) => {
    const other = off.loads[index];
    row(`${load.name} req/s`, int(load.rps), int(other?.rps ?? NaN), ratio(load.rps, other?.rps));
    row(`${load.name} p50 ms`, ms(load.p50Ms), ms(other?.p50Ms ?? NaN), ratio(load.p50Ms, other?.p50Ms));
    row(`${load.name} p99 ms`, ms(load.p99Ms), ms(other?.p99Ms ?? NaN), ratio(load.p99Ms, other?.p99Ms));
    row(`${load.name} non-2xx / errors (all rounds)`, `${load.non2xx} / ${load.errors}`, other ? `${other.non2xx} / ${other.errors}` : '–');
  });
  row('server CPU µs/request', int(on.serverCpu), int(off.serverCpu), ratio(on.serverCpu, off.serverCpu));
  row('PostgreSQL CPU µs/request', int(on.postgresCpu), int(off.postgresCpu), ratio(on.postgresCpu, off.postgresCpu));
  const tail = (aggregate: Aggregate) => `${aggregate.afterLoad.seconds.toFixed(1)} s${aggregate.afterLoad.notQuiet ? ` (${aggregate.afterLoad.notQuiet} run(s) not quiet after ${QUIET_MAX_MS / 1000} s)` : ''}`;
  row('after the load: seconds until the server was quiet', tail(on), tail(off));
  row('after the load: server CPU µs/request', int(on.afterLoad.serverCpu), int(off.afterLoad.serverCpu));
  row('after the load: PostgreSQL CPU µs/request', int(on.afterLoad.postgresCpu), int(off.afterLoad.postgresCpu));
  row('peak RSS MB (max of rounds)', int(on.peakRssMb), int(off.peakRssMb), ratio(on.peakRssMb, off.peakRssMb));
  if (on.integrity || off.integrity) row('stored = acknowledged (all rounds)', integrityText(on), integrityText(off));
  const activity = (aggregate: Aggregate, pick: (alerting: AlertingActivity) => string) => (aggregate.alerting ? pick(aggregate.alerting) : '–');
  row(
    'records sent (all rounds): soc < 20 / temperature outside −10…55',
    activity(on, (a) => `${int(a.sent.records)}: ${share(a.sent.socBelow20, a.sent.records)} / ${share(a.sent.temperatureOutside, a.sent.records)}`),
    activity(off, (a) => `${int(a.sent.records)}: ${share(a.sent.socBelow20, a.sent.records)} / ${share(a.sent.temperatureOutside, a.sent.records)}`),
  );
  row('alerts opened / resolved (all rounds)', activity(on, (a) => `${int(a.opened)} / ${int(a.resolved)}`), activity(off, (a) => `${int(a.opened)} / ${int(a.resolved)}`));
  row('alert_series rows when quiet (max of rounds; the table is shared)', activity(on, (a) => int(a.seriesAtEnd)), activity(off, (a) => int(a.seriesAtEnd)));
  row(
    'flushes not evaluated: queue full / failed (all rounds)',
    activity(on, (a) => `${int(a.skippedFlushes)} / ${int(a.failedFlushes)}`),
    activity(off, (a) => `${int(a.skippedFlushes)} / ${int(a.failedFlushes)}`),
  );
  const offSwitch = feature === 'alerting' ? 'ALERTS_ENABLED=false' : 'BATTERY_ANALYTICS_ENABLED=false';
  return [`| ${summary.variant.id}: ${feature} | on (service) | off (${offSwitch}) | on ÷ off |`, '| --- | ---: | ---: | ---: |', ...rows].join('\n');
}

/** A push latency: Infinity stands for deliveries that never came within the grace. */
const pushMs = (value: number) => (value === Number.POSITIVE_INFINITY ? `> ${PUSH_GRACE_MS / 1000} s (deliveries missing)` : ms(value));

/**
 * S6: the service with the stream subscribers connected against the same service without any,
 * measured in the same rounds; the ratios are with ÷ without (throughput ≥ 0.9 is the target).
 */
function streamsTable(summary: VariantSummary): string | undefined {
  const without = summary.service;
  const withStreams = summary.streams;
  if (!without || !withStreams) return undefined;
  const a = without.streams;
  const b = withStreams.streams;
  const rows: string[] = [];
  const row = (label: string, x: string, y: string, r = '') => rows.push(`| ${label} | ${x} | ${y} | ${r} |`);
  withStreams.loads.forEach((load, index) => {
    const other = without.loads[index];
    row(`${load.name} req/s`, int(other?.rps ?? NaN), int(load.rps), ratio(load.rps, other?.rps));
    if (Number.isFinite(load.recordsPerSec)) row(`${load.name} records/s`, int(other?.recordsPerSec ?? NaN), int(load.recordsPerSec), ratio(load.recordsPerSec, other?.recordsPerSec));
    row(`${load.name} p50 ms`, ms(other?.p50Ms ?? NaN), ms(load.p50Ms), ratio(load.p50Ms, other?.p50Ms));
    row(`${load.name} p99 ms`, ms(other?.p99Ms ?? NaN), ms(load.p99Ms), ratio(load.p99Ms, other?.p99Ms));
    row(`${load.name} non-2xx / errors (all rounds)`, other ? `${other.non2xx} / ${other.errors}` : '–', `${load.non2xx} / ${load.errors}`);
  });
  if (a && b) {
    row('streams open (fewest in a round) / refused (all rounds)', `${int(a.streams)} / ${int(a.refused)}`, `${int(b.streams)} / ${int(b.refused)}`);
    row('seconds to open them (before the warm-up)', '–', String(b.openSeconds));
    row('server RSS MB before → after opening them (quiet, before the warm-up)', `${int(a.rssBeforeOpenMb)} → ${int(a.rssAfterOpenMb)}`, `${int(b.rssBeforeOpenMb)} → ${int(b.rssAfterOpenMb)}`);
    row('streams the service ended during the measured runs (all rounds)', int(a.closedByServer), int(b.closedByServer));
    row('telemetry events received by all subscribers per second', '–', int(b.eventsPerSec));
    row('push latency p50 ms (probe answered → its event at a subscriber)', '–', pushMs(b.pushP50Ms));
    row('push latency p99 ms', '–', pushMs(b.pushP99Ms));
    row('push latency max ms (all rounds)', '–', pushMs(b.pushMaxMs));
    row('probe deliveries received / expected (all rounds)', '–', `${int(b.deliveriesReceived)} / ${int(b.deliveriesExpected)}`);
    row('probes answered / sent (all rounds)', `${int(a.probesAcked)} / ${int(a.probes)}`, `${int(b.probesAcked)} / ${int(b.probes)}`);
    row('probe answer p50 / p99 ms', `${ms(a.probeAnswerP50Ms)} / ${ms(a.probeAnswerP99Ms)}`, `${ms(b.probeAnswerP50Ms)} / ${ms(b.probeAnswerP99Ms)}`);
  }
  row('server CPU µs/request', int(without.serverCpu), int(withStreams.serverCpu), ratio(withStreams.serverCpu, without.serverCpu));
  row('PostgreSQL CPU µs/request', int(without.postgresCpu), int(withStreams.postgresCpu), ratio(withStreams.postgresCpu, without.postgresCpu));
  row('load generator CPU µs/request (autocannon)', int(without.loadGeneratorCpu), int(withStreams.loadGeneratorCpu));
  row('stream client CPU µs/request (its own process: probes, streams)', int(a?.clientCpu ?? NaN), int(b?.clientCpu ?? NaN));
  row('after the load: seconds until the server was quiet', without.afterLoad.seconds.toFixed(1), withStreams.afterLoad.seconds.toFixed(1));
  row('peak RSS MB (max of rounds)', int(without.peakRssMb), int(withStreams.peakRssMb), ratio(withStreams.peakRssMb, without.peakRssMb));
  if (without.integrity || withStreams.integrity) row('stored = acknowledged (all rounds)', integrityText(without), integrityText(withStreams));
  return [`| ${summary.variant.id} | no subscribers | ${int(b?.streams ?? NaN)} subscribers | with ÷ without |`, '| --- | ---: | ---: | ---: |', ...rows].join('\n');
}

/** A command latency: Infinity stands for commands that never came within the grace. */
const commandMs = (value: number) => (value === Number.POSITIVE_INFINITY ? `> ${COMMAND_GRACE_MS / 1000} s (commands missing)` : ms(value));

/**
 * S9: S1 on the service beside the 1,000 gateways holding long polls (and, in S9-commands, the
 * commands sent to them) against S1 alone, measured in the same rounds (S9-commands has no runs of
 * its own without: `alone` is S9-wait's); the ratios are with ÷ without (for S9-wait, throughput
 * ≥ 0.9 is the target).
 */
function longPollsTable(summary: VariantSummary, alone: Aggregate | undefined): string | undefined {
  const without = summary.service ?? alone;
  const withPolls = summary.longPolls;
  if (!without || !withPolls) return undefined;
  const p = withPolls.longPolls;
  const commands = summary.variant.longPolls?.commandIntervalMs != null;
  const rows: string[] = [];
  const row = (label: string, x: string, y: string, r = '') => rows.push(`| ${label} | ${x} | ${y} | ${r} |`);
  withPolls.loads.forEach((load, index) => {
    const other = without.loads[index];
    row(`${load.name} req/s`, int(other?.rps ?? NaN), int(load.rps), ratio(load.rps, other?.rps));
    row(`${load.name} p50 ms`, ms(other?.p50Ms ?? NaN), ms(load.p50Ms), ratio(load.p50Ms, other?.p50Ms));
    row(`${load.name} p99 ms`, ms(other?.p99Ms ?? NaN), ms(load.p99Ms), ratio(load.p99Ms, other?.p99Ms));
    row(`${load.name} non-2xx / errors (all rounds)`, other ? `${other.non2xx} / ${other.errors}` : '–', `${load.non2xx} / ${load.errors}`);
  });
  if (p) {
    row('long polls held once opened (fewest in a round) / failed to open (all rounds)', '–', `${int(p.heldAtOpen)} / ${int(p.openFailures)}`);
    row('long polls held at the start of the measured run (fewest in a round; the others between two polls)', '–', int(p.held));
    row('seconds to open them (before the warm-up)', '–', String(p.openSeconds));
    row('server RSS MB before opening them → while they wait (quiet, before the warm-up and the commands)', '–', `${int(p.rssBeforeOpenMb)} → ${int(p.rssWaitingMb)}`);
    row('server RSS growth MB for the held polls (median of rounds)', '–', ms(p.rssGrowthMb));
  }
  if (p && commands) {
    row('commands sent / refused (all rounds)', '–', `${int(p.commands)} / ${int(p.sendFailures)}`);
    row('send answered (201) p50 / p99 ms', '–', `${ms(p.sendP50Ms)} / ${ms(p.sendP99Ms)}`);
    row('delivery p50 / p99 / max ms (send → the long poll carrying it answered)', '–', `${commandMs(p.deliveryP50Ms)} / ${commandMs(p.deliveryP99Ms)} / ${commandMs(p.deliveryMaxMs)}`);
    row("answer p50 / p99 / max ms (send → the gateway's result answered)", '–', `${commandMs(p.answerP50Ms)} / ${commandMs(p.answerP99Ms)} / ${commandMs(p.answerMaxMs)}`);
    row('commands delivered / answered (all rounds)', '–', `${int(p.deliveries)} / ${int(p.answers)}`);
  }
  if (p) {
    row('long polls answered 200 / 304 / failed (all rounds)', '–', `${int(p.polls200)} / ${int(p.polls304)} / ${int(p.pollErrors)}`);
    row('304s more than 1 s before the wait ran out / results not answered 200 (all rounds)', '–', `${int(p.early304)} / ${int(p.resultFailures)}`);
  }
  row('server CPU µs/request', int(without.serverCpu), int(withPolls.serverCpu), ratio(withPolls.serverCpu, without.serverCpu));
  row('PostgreSQL CPU µs/request', int(without.postgresCpu), int(withPolls.postgresCpu), ratio(withPolls.postgresCpu, without.postgresCpu));
  row('load generator CPU µs/request (autocannon)', int(without.loadGeneratorCpu), int(withPolls.loadGeneratorCpu));
  row(`long-poll client CPU µs/request (its own process: polls${commands ? ', results, sends' : ''})`, '–', int(p?.clientCpuUsPerRequest ?? NaN));
  row('after the load: seconds until the server was quiet', without.afterLoad.seconds.toFixed(1), withPolls.afterLoad.seconds.toFixed(1));
  row('peak RSS MB (max of rounds)', int(without.peakRssMb), int(withPolls.peakRssMb), ratio(withPolls.peakRssMb, without.peakRssMb));
  if (without.integrity || withPolls.integrity) row('stored = acknowledged (all rounds)', integrityText(without), integrityText(withPolls));
  const aloneLabel = summary.service ? 'S1 alone' : `S1 alone (${alone === undefined ? '–' : "S9-wait-c50's runs"})`;
  return [`| ${summary.variant.id} | ${aloneLabel} | beside ${int(p?.heldAtOpen ?? NaN)} long polls${commands ? ' and the commands' : ''} | with ÷ without |`, '| --- | ---: | ---: | ---: |', ...rows].join('\n');
}

function variantTable(summary: VariantSummary): string {
  const { baseline, service } = summary;
  const rows: string[] = [];
  const row = (label: string, b: string, s: string, r = '') => rows.push(`| ${label} | ${b} | ${s} | ${r} |`);
  const loadNames = (service ?? baseline)?.loads.map((load) => load.name) ?? [];
  loadNames.forEach((name, index) => {
    const b = baseline?.loads[index];
    const s = service?.loads[index];
    row(`${name} req/s`, int(b?.rps ?? NaN), int(s?.rps ?? NaN), ratio(s?.rps, b?.rps));
    row(`${name} p50 ms`, ms(b?.p50Ms ?? NaN), ms(s?.p50Ms ?? NaN), ratio(s?.p50Ms, b?.p50Ms));
    row(`${name} p99 ms`, ms(b?.p99Ms ?? NaN), ms(s?.p99Ms ?? NaN), ratio(s?.p99Ms, b?.p99Ms));
    row(`${name} non-2xx / errors (all rounds)`, b ? `${b.non2xx} / ${b.errors}` : '–', s ? `${s.non2xx} / ${s.errors}` : '–');
    if ((b?.notModified ?? 0) + (s?.notModified ?? 0) > 0) {
      const share = (load: LoadAggregate | undefined) => (load ? `${load.notModified} (${pct(load.notModified / Math.max(1, load.requests))})` : '–');
      row(`${name} 304 answers (all rounds)`, share(b), share(s));
    }
    if ((b?.unexpectedBodies ?? 0) + (s?.unexpectedBodies ?? 0) > 0) row(`${name} unexpected 2xx bodies`, String(b?.unexpectedBodies ?? 0), String(s?.unexpectedBodies ?? 0));
  });
  row('server CPU µs/request', int(baseline?.serverCpu ?? NaN), int(service?.serverCpu ?? NaN), ratio(service?.serverCpu, baseline?.serverCpu));
  row('PostgreSQL CPU µs/request', int(baseline?.postgresCpu ?? NaN), int(service?.postgresCpu ?? NaN), ratio(service?.postgresCpu, baseline?.postgresCpu));
  if (baseline?.postgresTransactionsPerRequest !== undefined || service?.postgresTransactionsPerRequest !== undefined) {
    const tx = (value: number | undefined) => (value === undefined ? '–' : value.toFixed(4));
    row('PostgreSQL transactions / request', tx(baseline?.postgresTransactionsPerRequest), tx(service?.postgresTransactionsPerRequest));
  }
  row('load generator CPU µs/request', int(baseline?.loadGeneratorCpu ?? NaN), int(service?.loadGeneratorCpu ?? NaN));
  row('peak RSS MB (max of rounds)', int(baseline?.peakRssMb ?? NaN), int(service?.peakRssMb ?? NaN), ratio(service?.peakRssMb, baseline?.peakRssMb));
  if (baseline?.integrity || service?.integrity) row('stored = acknowledged (all rounds)', integrityText(baseline), integrityText(service));
  return [`| ${summary.variant.id} | baseline | service | service ÷ baseline |`, '| --- | ---: | ---: | ---: |', ...rows].join('\n');
}

export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean | undefined;
  note?: string;
}

export function checkTargets(summaries: VariantSummary[], info: RunInfo): TargetCheck[] {
  const find = (id: string) => summaries.find((summary) => summary.variant.id === id);
  const checks: TargetCheck[] = [];
  const s1 = find('S1-c50');
  if (s1?.service && s1.baseline) {
    const r = s1.service.loads[0].rps / s1.baseline.loads[0].rps;
    checks.push({ target: 'S1 throughput ≥ 0.85 × baseline (50 connections)', measured: `${r.toFixed(2)} × (${int(s1.service.loads[0].rps)} vs ${int(s1.baseline.loads[0].rps)} req/s)`, met: r >= 0.85 });
    checks.push({ target: 'S1 throughput ≥ 1.8 × baseline with group commit (50 connections)', measured: `${r.toFixed(2)} ×`, met: r >= 1.8 });
    checks.push({ target: 'S1 p99 ≤ 20 ms (50 connections)', measured: `${ms(s1.service.loads[0].p99Ms)} ms (baseline ${ms(s1.baseline.loads[0].p99Ms)} ms)`, met: s1.service.loads[0].p99Ms <= 20 });
  }
  const s2 = find('S2-c50');
  if (s2?.service && s2.baseline) {
    const r = s2.service.loads[0].rps / s2.baseline.loads[0].rps;
    checks.push({ target: 'S2 throughput ≥ 0.9 × baseline', measured: `${r.toFixed(2)} × (${int(s2.service.loads[0].rps)} vs ${int(s2.baseline.loads[0].rps)} req/s)`, met: r >= 0.9 });
  }
  // Alerting and battery analytics each cost S1 and S2 at most 5 % of their throughput.
  for (const [summary, label] of [
    [s1, 'S1 throughput (50 connections)'],
    [s2, 'S2 throughput'],
  ] as const) {
    for (const [feature, off] of [
      ['alerting', summary?.alertsOff],
      ['battery analytics', summary?.batteriesOff],
    ] as const) {
      if (!summary?.service || !off) continue;
      const r = summary.service.loads[0].rps / off.loads[0].rps;
      checks.push({ target: `${label} with ${feature} ≥ 0.95 × ${feature} off`, measured: `${r.toFixed(2)} × (${int(summary.service.loads[0].rps)} vs ${int(off.loads[0].rps)} req/s)`, met: r >= 0.95 });
    }
  }
  const s4 = find('S4-c50');
  if (s4?.service && s4.baseline) {
    const rps = s4.service.loads[0].rps;
    const r = rps / s4.baseline.loads[0].rps;
    checks.push({ target: 'S4 ≥ 15,000 req/s', measured: `${int(rps)} req/s`, met: rps >= 15_000 });
    checks.push({ target: 'S4 ≥ 0.85 × baseline', measured: `${r.toFixed(2)} × (${int(rps)} vs ${int(s4.baseline.loads[0].rps)} req/s)`, met: r >= 0.85 });
    const tx = s4.service.postgresTransactionsPerRequest;
    if (tx !== undefined) {
      checks.push({ target: 'S4: no database query for a poll the ETag answers', measured: `${tx.toFixed(4)} PostgreSQL transactions per request; ${pct(s4.service.loads[0].notModified / Math.max(1, s4.service.loads[0].requests))} of answers were 304`, met: tx < 0.001 });
    }
  }
  const s8 = find('S8-c50');
  if (s8?.service) {
    const rps = s8.service.loads[0].rps;
    const s4Rps = s4?.service?.loads[0].rps;
    checks.push({
      target: "S8 idle command polls ≥ S4's poll rate (same run)",
      measured: s4Rps === undefined ? `${int(rps)} req/s (S4 not measured)` : `${(rps / s4Rps).toFixed(2)} × (${int(rps)} vs ${int(s4Rps)} req/s)`,
      met: s4Rps === undefined ? undefined : rps >= s4Rps,
    });
    const tx = s8.service.postgresTransactionsPerRequest;
    if (tx !== undefined) {
      checks.push({ target: 'S8: no database query for a command poll the ETag answers', measured: `${tx.toFixed(4)} PostgreSQL transactions per request; ${pct(s8.service.loads[0].notModified / Math.max(1, s8.service.loads[0].requests))} of answers were 304`, met: tx < 0.001 });
    }
  }
  const s9Wait = find('S9-wait-c50');
  const s9Commands = find('S9-commands-c50');
  const delivered = s9Commands?.longPolls?.longPolls;
  if (delivered) {
    checks.push({
      target: `S9 command round trip p99 ≤ 1 s (send → the gateway's result answered, ${int(delivered.heldAtOpen)} long polls held, S1 at 50 connections)`,
      measured: `${commandMs(delivered.answerP99Ms)} ms (p50 ${commandMs(delivered.answerP50Ms)} ms; delivery p50 ${commandMs(delivered.deliveryP50Ms)}, p99 ${commandMs(delivered.deliveryP99Ms)} ms; ${int(delivered.answers)} of ${int(delivered.commands - delivered.sendFailures)} commands answered)`,
      met: delivered.answerP99Ms <= 1000 && delivered.commands > 0 && delivered.sendFailures === 0,
    });
  }
  const waiting = (s9Wait ?? s9Commands)?.longPolls?.longPolls;
  if (waiting) {
    checks.push({
      target: 'S9 service RSS growth ≤ 50 MB for 1,000 held long polls',
      measured: `${ms(waiting.rssGrowthMb)} MB (${int(waiting.rssBeforeOpenMb)} → ${int(waiting.rssWaitingMb)} MB, medians of rounds${s9Wait ? '' : ', S9-commands-c50'})`,
      met: waiting.rssGrowthMb <= 50 && waiting.heldAtOpen >= 1000,
    });
  }
  const s9 = s9Wait;
  if (s9?.longPolls && s9.service) {
    const r = s9.longPolls.loads[0].rps / s9.service.loads[0].rps;
    checks.push({
      target: 'S9: S1 throughput beside 1,000 held long polls ≥ 0.9 × without them',
      measured: `${r.toFixed(2)} × (${int(s9.longPolls.loads[0].rps)} vs ${int(s9.service.loads[0].rps)} req/s)`,
      met: r >= 0.9,
    });
  }
  const s10 = find('S10-c50');
  if (s10?.service) {
    const rps = s10.service.loads[0].rps;
    checks.push({
      target: 'S10 log upload ≥ 1,000 req/s (50-line batches)',
      measured: `${int(rps)} req/s, ${int(rps * 50)} lines/s${s10.baseline ? ` (${(rps / s10.baseline.loads[0].rps).toFixed(2)} × baseline, ${int(s10.baseline.loads[0].rps)} req/s)` : ''}`,
      met: rps >= 1000,
    });
  }
  const fullData = info.seed.devices >= 1000 && info.seed.days >= 30;
  for (const [label, limit] of [
    ['24h', 20],
    ['7d', 30],
    ['30d', 40],
  ] as const) {
    const s3 = find(`S3-${label}-c4`);
    if (s3?.service) {
      checks.push({
        target: `S3 ${label} p99 ≤ ${limit} ms at 4 connections (full data)`,
        measured: `${ms(s3.service.loads[0].p99Ms)} ms (baseline ${ms(s3.baseline?.loads[0].p99Ms ?? NaN)} ms)`,
        met: s3.service.loads[0].p99Ms <= limit,
        note: fullData ? undefined : `measured on ${info.seed.devices} devices × ${info.seed.days} days, not the full data set`,
      });
    }
  }
  const s7 = find('S7-energy-30d-c4');
  if (s7?.service) {
    checks.push({
      target: 'S7 battery energy, 30 days in daily buckets: p99 ≤ 20 ms (4 connections)',
      measured: `${ms(s7.service.loads[0].p99Ms)} ms (baseline ${ms(s7.baseline?.loads[0].p99Ms ?? NaN)} ms)`,
      met: s7.service.loads[0].p99Ms <= 20,
      note: info.seed.devices >= 100 && info.seed.days >= 30 ? undefined : `measured on ${info.seed.devices} devices × ${info.seed.days} days, not the default data set`,
    });
  }
  const s11 = find('S11-c4');
  if (s11?.service) {
    const list = s11.service.loads[0];
    checks.push({
      target: 'S11 organization list, first page of 10,000 devices: p99 ≤ 50 ms',
      measured: `${ms(list.p99Ms)} ms at 4 connections (p50 ${ms(list.p50Ms)} ms, ${int(list.rps)} req/s; ${list.unexpectedBodies} answers without the 50 devices)`,
      met: list.p99Ms <= 50 && list.unexpectedBodies === 0 && list.requests > 0,
    });
  }
  const s6 = summaries.find((summary) => summary.variant.scenario === 'S6');
  if (s6?.streams?.streams) {
    const p99 = s6.streams.streams.pushP99Ms;
    checks.push({
      target: `S6 push latency p99 ≤ 1 s (ingest answer → event, ${int(s6.streams.streams.streams)} subscribers)`,
      measured: `${pushMs(p99)} ms (p50 ${pushMs(s6.streams.streams.pushP50Ms)} ms; ${int(s6.streams.streams.deliveriesReceived)} of ${int(s6.streams.streams.deliveriesExpected)} probe deliveries received)`,
      met: p99 <= 1000 && s6.streams.streams.deliveriesExpected > 0,
    });
  }
  if (s6?.streams && s6.service) {
    const r = s6.streams.loads[0].rps / s6.service.loads[0].rps;
    checks.push({
      target: 'S6: S1 throughput with the subscribers ≥ 0.9 × with none',
      measured: `${r.toFixed(2)} × (${int(s6.streams.loads[0].rps)} vs ${int(s6.service.loads[0].rps)} req/s)`,
      met: r >= 0.9,
    });
    checks.push({ target: 'S6: service RSS ≤ 250 MB with the subscribers, under S1', measured: `${int(s6.streams.peakRssMb)} MB peak (${int(s6.service.peakRssMb)} MB without)`, met: s6.streams.peakRssMb <= 250 });
  }
  const s1Rss = summaries.filter((summary) => summary.variant.scenario === 'S1' && summary.service).map((summary) => summary.service!.peakRssMb);
  if (s1Rss.length > 0) {
    const peak = Math.max(...s1Rss);
    checks.push({ target: 'Service RSS ≤ 200 MB under S1', measured: `${int(peak)} MB peak`, met: peak <= 200 });
  }
  const all = summaries.flatMap((summary) => [summary.baseline, summary.service, summary.alertsOff, summary.batteriesOff, summary.streams, summary.longPolls]).filter((aggregate): aggregate is Aggregate => aggregate !== undefined);
  if (all.length > 0) {
    const non2xx = all.reduce((sum, aggregate) => sum + aggregate.loads.reduce((s, load) => s + load.non2xx, 0), 0);
    const errors = all.reduce((sum, aggregate) => sum + aggregate.loads.reduce((s, load) => s + load.errors, 0), 0);
    checks.push({ target: 'non-2xx = 0 (every run, every server)', measured: `${non2xx} non-2xx, ${errors} connection errors/timeouts`, met: non2xx === 0 && errors === 0 });
    const integrity = all.map((aggregate) => aggregate.integrity).filter((check) => check !== undefined);
    if (integrity.length > 0) {
      checks.push({
        target: 'stored records (S10: log lines) = acknowledged (every ingest and log upload run)',
        measured: integrity.every((check) => check.ok) ? 'equal in every run' : 'MISMATCH in at least one run (see tables)',
        met: integrity.every((check) => check.ok),
      });
    }
  }
  return checks;
}

function roundsTable(runs: RunResult[]): string {
  const lines = [
    '| variant | round | server | req/s | p50 ms | p99 ms | non-2xx | server µs/req | PostgreSQL µs/req | peak RSS MB | other CPU | idle servers CPU | after load s | stored = acked |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const run of runs) {
    const main = run.loads[0];
    const integrity = main.integrity ? (main.integrity.ok ? `yes (${int(main.integrity.stored)})` : `NO (${int(main.integrity.stored)} vs ${int(main.integrity.acknowledged)})`) : '–';
    lines.push(
      `| ${run.variant} | ${run.round} | ${run.target} | ${int(main.rps)} | ${ms(main.p50Ms)} | ${ms(main.p99Ms)} | ${run.loads.reduce((s, l) => s + l.non2xx, 0)} | ${int(run.serverCpuUsPerRequest)} | ${int(run.postgresCpuUsPerRequest)} | ${int(run.peakRssMb)} | ${pct(run.otherCpuShare)} | ${pct(run.idleServersCpuShare)} | ${run.afterLoad.seconds.toFixed(1)}${run.afterLoad.quiet ? '' : '+'} | ${integrity} |`,
    );
  }
  return lines.join('\n');
}

/** S6: the stream client's figures of every run (with and without subscribers). */
function streamRunsTable(runs: RunResult[]): string[] {
  const withStreams = runs.filter((run) => run.streams);
  if (withStreams.length === 0) return [];
  const lines = [
    '### S6 every run: the stream client',
    '',
    '| variant | round | server | streams open / refused | ended by the service | events/s received | push p50 ms | push p99 ms | push max ms | probe deliveries | probe answer p99 ms | stream client µs/req |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const run of withStreams) {
    const stats = run.streams!;
    const pushed = stats.deliveriesExpected > 0;
    lines.push(
      `| ${run.variant} | ${run.round} | ${run.target} | ${int(stats.streams)} / ${int(stats.refused)} | ${int(stats.closedByServer)} | ${int(stats.eventsPerSec)} | ${pushed ? pushMs(stats.pushP50Ms) : '–'} | ${pushed ? pushMs(stats.pushP99Ms) : '–'} | ${pushed ? pushMs(stats.pushMaxMs) : '–'} | ${int(stats.deliveriesReceived)} / ${int(stats.deliveriesExpected)} | ${ms(stats.probeAnswerP99Ms)} | ${int(stats.clientCpuUsPerRequest)} |`,
    );
  }
  return [...lines, ''];
}

/** S9: the long-poll client's figures of every run with the long polls. */
function longPollRunsTable(runs: RunResult[]): string[] {
  const withPolls = runs.filter((run) => run.longPolls);
  if (withPolls.length === 0) return [];
  const lines = [
    '### S9 every run: the long-poll client',
    '',
    '| variant | round | held once opened / at the measured start | RSS before → waiting MB | commands / refused | delivery p50 ms | delivery p99 ms | answer p50 ms | answer p99 ms | answer max ms | polls 200 / 304 / failed | early 304s | long-poll client µs/req |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const run of withPolls) {
    const p = run.longPolls!;
    lines.push(
      `| ${run.variant} | ${run.round} | ${int(p.heldAtOpen)} / ${int(p.held)} | ${int(p.rssBeforeOpenMb)} → ${int(p.rssWaitingMb)} | ${int(p.commands)} / ${int(p.sendFailures)} | ${commandMs(p.deliveryP50Ms)} | ${commandMs(p.deliveryP99Ms)} | ${commandMs(p.answerP50Ms)} | ${commandMs(p.answerP99Ms)} | ${commandMs(p.answerMaxMs)} | ${int(p.polls200)} / ${int(p.polls304)} / ${int(p.pollErrors)} | ${int(p.early304)} | ${int(p.clientCpuUsPerRequest)} |`,
    );
  }
  return [...lines, ''];
}

/** A warning when other processes used a noticeable share of the CPUs during measured runs. */
function disturbance(runs: RunResult[]): string[] {
  const idle = `- The servers not measured sat idle during each run and used at most ${pct(Math.max(0, ...runs.map((run) => run.idleServersCpuShare)))} of the CPUs (job polling, timers; "idle servers CPU" in "Every run").`;
  const disturbed = runs.filter((run) => run.otherCpuShare > 0.05);
  if (disturbed.length === 0) return [`- Other processes used at most ${pct(Math.max(0, ...runs.map((run) => run.otherCpuShare)))} of the CPUs during measured runs.`, idle, ''];
  return [
    `- **Warning:** in ${disturbed.length} of ${runs.length} measured runs other processes used more than 5 % of the CPUs (up to ${pct(Math.max(...disturbed.map((run) => run.otherCpuShare)))}; see "other CPU" in "Every run"). Those figures are disturbed; run again on a quiet machine.`,
    idle,
    '',
  ];
}

/** The machine as every report names it: CPUs, memory, kernel, Node. */
export function machineDescription(machine: MachineInfo): string {
  return `${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memGiB} GiB RAM, Linux ${machine.kernel}, Node ${machine.node}`;
}

export function machineText(info: RunInfo): string {
  return `${machineDescription(info.machine)}, ${info.postgresVersion}`;
}

export function dataText(seed: SeedInfo): string {
  return `${seed.devices} devices × ${seed.days} days at one record per 10 s, 4 metrics: ${int(seed.records)} records, ${int(seed.rollupRows)} rollup rows, ending ${seed.t0}. ${
    seed.reused ? `Reused from an earlier seeding (reset in ${seed.cleanupSeconds} s); it was seeded in ${seed.seconds.total} s` : `Seeded in ${seed.seconds.total} s`
  } (history + rollup ${seed.seconds.telemetryAndRollup} s, indexes ${seed.seconds.indexes} s, VACUUM ANALYZE ${seed.seconds.vacuumAnalyze} s${seed.seconds.batteryEnergy === undefined ? '' : `, battery energy ${seed.seconds.batteryEnergy} s`}). Telemetry heap ${int(seed.bytes.telemetryHeap / 2 ** 20)} MB (${int(seed.bytes.telemetryHeap / Math.max(1, seed.records))} B/record), its indexes ${int(seed.bytes.telemetryIndexes / 2 ** 20)} MB, rollup with indexes ${int(seed.bytes.rollupTotal / 2 ** 20)} MB.${diskPerRecord(seed)}`;
}

/**
 * Bytes on disk per seeded record: the rows' heap and indexes, each rollup level, the compact days,
 * and all of it; with compact days, also per settled record (the compact days' bytes over their
 * records, plus the hourly, 6-hour and daily rollups' share of every record) and per recent one.
 */
function diskPerRecord(seed: SeedInfo): string {
  const per = (bytes: number, records = seed.records) => (bytes / Math.max(1, records)).toFixed(1);
  const { telemetryHeap, telemetryIndexes, rollupTotal, rollupLevels, compactDays = 0 } = seed.bytes;
  const levels = rollupLevels ? ` (${Object.entries(rollupLevels).map(([level, bytes]) => `${level} ${per(bytes)}`).join(', ')})` : '';
  const all = ` Per record on disk: rows' heap ${per(telemetryHeap)} B, their indexes ${per(telemetryIndexes)} B, rollups ${per(rollupTotal)} B${levels}${compactDays > 0 ? `, compact days ${per(compactDays)} B` : ''}; **${per(telemetryHeap + telemetryIndexes + rollupTotal + compactDays)} B in all**.`;
  const compaction = seed.compaction;
  if (!compaction || !rollupLevels) return all;
  const settled = seed.records - compaction.rowRecords;
  const coarse = rollupTotal - (rollupLevels['5m'] ?? 0);
  return `${all} Settled (${settled.toLocaleString('en-US')} records in ${int(compaction.days)} compact device-days): **${(compactDays / Math.max(1, settled) + coarse / Math.max(1, seed.records)).toFixed(1)} B per record** (compact days ${per(compactDays, settled)} B, hourly and coarser rollups ${per(coarse)} B); recent rows (${compaction.rowRecords.toLocaleString('en-US')} records): ${per(telemetryHeap + telemetryIndexes + (rollupLevels['5m'] ?? 0), compaction.rowRecords)} B per record with their 5-minute rollup. Compaction as of t0: ${compaction.seconds} s, PostgreSQL CPU ${compaction.postgresCpuSeconds ?? '?'} s (${compaction.postgresCpuSeconds === null ? '?' : (compaction.postgresCpuSeconds / Math.max(1, compaction.days)).toFixed(2)} s per device-day).`;
}

export function renderReport(info: RunInfo, summaries: VariantSummary[], runs: RunResult[]): string {
  const { options } = info;
  const minutes = Math.round((info.finishedAt.getTime() - info.startedAt.getTime()) / 6000) / 10;
  const targets = checkTargets(summaries, info);
  return [
    `# Benchmark run ${info.startedAt.toISOString()}`,
    '',
    `- Machine: ${machineText(info)}. Load generator, server and PostgreSQL share the CPUs.`,
    `- Run: profile ${options.profile}, scenarios ${options.scenarios.join(', ')}, ${options.rounds} round(s)${summaries.some((summary) => !summary.variant.streams && !summary.variant.longPolls && !summary.variant.serviceOnly) ? ' of baseline then service per variant' : ''}${
      summaries.some((summary) => summary.alertsOff)
        ? ' (S1 and S2: baseline, then the service as in production, with ALERTS_ENABLED=false and with BATTERY_ANALYTICS_ENABLED=false, those three reversed every other round)'
        : ''
    }${summaries.some((summary) => summary.variant.streams) ? ' (S6: the service alone, without and with the stream subscribers, the pair swapped every other round)' : ''}${
      summaries.some((summary) => summary.variant.longPolls) ? ' (S9: the service alone, without and with the long polls held, the pair swapped every other round, then with them and commands)' : ''
    }${summaries.some((summary) => summary.variant.serviceOnly) ? ' (S11: the service alone)' : ''}, ${options.warmupSec} s warm-up + ${options.durationSec} s measured per run, then a wait until the server is quiet; ${minutes} min in all.`,
    `- Data: ${dataText(info.seed)}`,
    `- Every server: pool of ${info.poolSize} connections; service run as npm start runs it (${startCommandOf(info)}) with NODE_ENV=production, LOG_LEVEL=warn${Object.entries(info.serviceSettings).map(([name, value]) => `, ${name}=${value}`).join('')}. Medians over rounds; non-2xx and integrity summed over rounds; peak RSS ${info.peakRssExact ? 'is VmHWM reset at the start of each measured run' : 'is sampled every 200 ms'}.`,
    '',
    ...disturbance(runs),
    '## Targets',
    '',
    '| target | measured | met |',
    '| --- | --- | --- |',
    ...targets.map((check) => `| ${check.target} | ${check.measured}${check.note ? ` (${check.note})` : ''} | ${check.met === undefined ? '–' : check.met ? 'yes' : '**no**'} |`),
    '',
    '## Results',
    '',
    ...summaries.flatMap((summary) => {
      if (summary.variant.streams) {
        const streams = streamsTable(summary);
        return [`### ${summary.variant.title}`, '', 'The service alone (no baseline serves streams), without and with the subscribers, in the same rounds:', '', streams ?? 'Incomplete: no pair of runs yet.', ''];
      }
      if (summary.variant.longPolls) {
        const alone = summaries.find((other) => other.variant.longPolls?.compareWithout && other.service)?.service;
        const longPolls = longPollsTable(summary, alone);
        const intro = summary.variant.longPolls.compareWithout
          ? 'The service alone (no baseline holds long polls), S1 without and beside the long polls, in the same rounds:'
          : "The service alone, S1 beside the long polls and the commands; S1 alone is S9-wait-c50's, in the same rounds:";
        return [`### ${summary.variant.title}`, '', intro, '', longPolls ?? 'Incomplete: no runs yet.', ''];
      }
      const alerting = onOffTable(summary, 'alerting');
      const batteries = onOffTable(summary, 'battery analytics');
      return [
        `### ${summary.variant.title}`,
        '',
        ...(summary.variant.serviceOnly ? ['The service alone (the baseline has no such route):', ''] : []),
        variantTable(summary),
        '',
        ...(alerting ? ['Alerting on ÷ off (the same service, ALERTS_ENABLED=false; same rounds):', '', alerting, ''] : []),
        ...(batteries ? ['Battery analytics on ÷ off (the same service, BATTERY_ANALYTICS_ENABLED=false; same rounds):', '', batteries, ''] : []),
      ];
    }),
    '## Every run',
    '',
    roundsTable(runs),
    '',
    ...streamRunsTable(runs),
    ...longPollRunsTable(runs),
  ].join('\n');
}
