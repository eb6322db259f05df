/**
 * `npm run bench`: the performance benchmark (not a test). One embedded PostgreSQL, seeded history,
 * the service and the hand-written baseline (bench/baseline-server.ts) side by side, rounds that
 * alternate baseline and service per scenario, and a report of medians and service ÷ baseline
 * ratios on stdout and in test-output/bench/last-run.md. S1 and S2 also run against a second
 * service process with ALERTS_ENABLED=false and a third with BATTERY_ANALYTICS_ENABLED=false, for
 * the report's alerting and battery analytics on ÷ off. With --soak, the
 * service alone under mixed traffic for a long time instead (bench/soak.ts,
 * test-output/bench/soak-last-run.md). See bench/README.md.
 */
import 'reflect-metadata';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger } from '@nestjs/common';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../src/shared/database/embedded-postgres.js';
import {
  BASELINE_PORT,
  BENCH_SECRETS,
  customersOf,
  DATABASE,
  devicesOf,
  gatewaysOf,
  HOST,
  liveDevicesOf,
  operatorsOf,
  organizationMembersOf,
  PG_PORT,
  POOL_SIZE,
  SERVICE_ALERTS_OFF_PORT,
  SERVICE_BATTERIES_OFF_PORT,
  SERVICE_PORT,
  viewersOf,
} from './fixtures.js';
import { runVariant, type AlertLogCounts, type RunResult, type Target } from './measure.js';
import { parseOptions, USAGE } from './options.js';
import { machineInfo, resetPeakRss } from './proc-stats.js';
import { renderReport, summarize, type RunInfo } from './report.js';
import { VARIANTS, type Variant } from './scenarios.js';
import { prepareData } from './seed.js';
import { EventLoopLog, renderSoakReport, runSoak, soakIntervalMs, type SoakInterval, type SoakResult } from './soak.js';
import { killAllChildrenNow, nodeFlagsFrom, serviceStart, startServer, type ServerProcess } from './servers.js';
import { runFloor } from './floor.js';
import { renderFleetReport, runFleet } from './fleet.js';
import { renderDownloadsReport, runDownloads } from './downloads.js';
import { Env } from '../src/config/env.js';
import { checkSqlParity } from './sql-parity.js';
import { fleetOf, IngestClock, type Fleet } from './workloads.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outputDir = join(root, 'test-output', 'bench');

const log = (message: string) => process.stdout.write(`${message}\n`);

/**
 * The targets of a variant, in the order of the round: the baseline, then the service as in
 * production and (S1, S2) with alerting off and with battery analytics off, those reversed every
 * other round; S6: the service alone without and with its stream subscribers, swapped likewise;
 * S9 the same without and with its long polls; S11 the service alone.
 */
function targetsOf(variant: Variant, round: number): Target[] {
  if (variant.serviceOnly) return ['service'];
  if (variant.streams) return round % 2 === 1 ? ['service', 'service-streams'] : ['service-streams', 'service'];
  if (variant.longPolls) {
    if (!variant.longPolls.compareWithout) return ['service-long-polls'];
    return round % 2 === 1 ? ['service', 'service-long-polls'] : ['service-long-polls', 'service'];
  }
  const services: Target[] = ['service'];
  if (variant.compareAlerting) services.push('service-alerts-off');
  if (variant.compareBatteries) services.push('service-batteries-off');
  return ['baseline', ...(round % 2 === 1 ? services : services.reverse())];
}

/** Counts the service's log lines that say a flush's alerts were not evaluated (src/modules/alerts/application/alert-monitor.ts). */
class AlertLog {
  private readonly counts: AlertLogCounts = { skipped: 0, failed: 0 };

  take(line: string): void {
    if (line.includes('Alert evaluation is behind')) this.counts.skipped += 1;
    else if (line.includes('Alert evaluation of a flush failed')) this.counts.failed += 1;
  }

  snapshot(): AlertLogCounts {
    return { ...this.counts };
  }
}

let cleanup: (() => Promise<void>) | undefined;
/** Writes the report of the runs finished so far; set once the servers are up. */
let writePartialReport: ((reason: string) => void) | undefined;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help')) {
    log(USAGE);
    return;
  }
  const options = parseOptions(argv);
  if (options.days > 360) throw new Error('--days must stay within the 365-day retention (at most 360)');
  // The service classes the seeding reuses log through Nest's static logger; keep the output to the bench's own.
  Logger.overrideLogger(false);
  mkdirSync(outputDir, { recursive: true });
  if (options.floor) {
    log(`Floor: S3's answers from bench/floor-server.ts, ${options.warmupSec} s warm-up + ${options.durationSec} s measured per row.`);
    await runFloor(root, outputDir, options, log);
    return;
  }
  const startedAt = new Date();
  const variants = options.scenarios.flatMap((scenario) => VARIANTS[scenario]);
  const compareAlerting = variants.some((variant) => variant.compareAlerting);
  const compareBatteries = variants.some((variant) => variant.compareBatteries);
  const needsBaseline = variants.some((variant) => targetsOf(variant, 1).includes('baseline'));
  const runsPerRound = variants.reduce((sum, variant) => sum + targetsOf(variant, 1).length, 0);
  const soakSec = options.soakSec;
  if (options.fleetGateways !== undefined) {
    log(`Fleet: ${options.fleetGateways} distinct gateways through the service alone, twice (bench/fleet.ts).`);
  } else if (options.downloadGateways !== undefined) {
    log(`Downloads: ${options.downloadGateways} gateways downloading a firmware image the service keeps, uploads beside (bench/downloads.ts).`);
  } else if (soakSec !== undefined) {
    // Each half of the fleet feeds one ingest stream (bench/soak.ts).
    if (options.devices < 2) throw new Error('--soak needs at least 2 devices');
    log(`Soak: ${options.devices} devices x ${options.days} days, the service alone, ${soakSec} s of mixed traffic, figures every ${soakIntervalMs(soakSec) / 1000} s.`);
  } else {
    const estimateMin = Math.round((runsPerRound * options.rounds * (options.warmupSec + options.durationSec + 3)) / 6) / 10;
    log(
      `Benchmark: ${options.devices} devices x ${options.days} days, ${variants.length} variants x ${options.rounds} rounds, ${runsPerRound} runs per round ` +
        `(${needsBaseline ? 'baseline and service' : 'the service'}${compareAlerting ? '; S1 and S2 also the service with ALERTS_ENABLED=false' : ''}${
          compareBatteries ? ' and with BATTERY_ANALYTICS_ENABLED=false' : ''
        }${
          options.scenarios.includes('S6') ? '; S6 the service alone, with 1,000 stream subscribers and with none' : ''
        }${options.scenarios.includes('S9') ? '; S9 the service alone, with 1,000 command long polls held and with none, then with them and commands' : ''}${
          options.scenarios.includes('S11') ? '; S11 the service alone' : ''
        }): about ${estimateMin} min of load after seeding.`,
    );
    await checkSqlParity();
    log('SQL parity: the baseline runs the same statements as the service.');
  }

  // The fleet run leaves its gateways (100,000 by default) in the database: a data directory of its
  // own, so the scenarios never run against them.
  const ownData = options.fleetGateways !== undefined ? 'fleet-' : options.downloadGateways !== undefined ? 'downloads-' : '';
  const dataDir = join(root, '.data-bench', `${ownData}${options.devices}x${options.days}`);
  const postgresLog = join(outputDir, 'postgres.log');
  writeFileSync(postgresLog, '');
  let postgres: EmbeddedPostgresHandle | undefined;
  const servers: ServerProcess[] = [];
  let pool: pg.Pool | undefined;
  cleanup = async () => {
    await Promise.allSettled(servers.map((server) => server.stop()));
    killAllChildrenNow();
    await pool?.end().catch(() => undefined);
    await postgres?.stop().catch(() => undefined);
    postgres = undefined;
  };

  try {
    postgres = await startEmbeddedPostgres({ dataDir, port: PG_PORT, persistent: true, onLog: (message) => appendFileSync(postgresLog, message) });
    const postmasterPid = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const seed = await prepareData(postgres.serverUrl, DATABASE, dataDir, { devices: options.devices, days: options.days }, options.reseed, log, postmasterPid);
    log(
      seed.reused
        ? `Data: reused ${seed.records.toLocaleString('en-US')} records (reset in ${seed.cleanupSeconds} s).`
        : `Data: seeded ${seed.records.toLocaleString('en-US')} records and ${seed.rollupRows.toLocaleString('en-US')} rollup rows in ${seed.seconds.total} s (${JSON.stringify(seed.seconds)}).`,
    );
    if (options.seedOnly) return;

    const databaseUrl = postgres.url(DATABASE);
    pool = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: 'bench-orchestrator' });
    // PostgreSQL stopping under idle connections must not crash the orchestrator before its cleanup.
    pool.on('error', () => undefined);
    // S4: one release offered to half the fleet (staged rollout), so /ota/latest answers both ways.
    await pool.query(
      `INSERT INTO firmware_releases (id, version, hardware_id, channel, url, sha256, size, release_notes, rollout_percent, min_from_version,
                                      max_failure_percent, paused, auto_paused_at, revoked, published_at, updated_at)
       VALUES ('00000000-0000-4000-8000-000000000001', '0.2.0', NULL, 'stable', 'https://firmware.example.com/gw/0.2.0.bin', repeat('a', 64), 1572864,
               'Bench release', 50, NULL, NULL, false, NULL, false, now(), now())
       ON CONFLICT DO NOTHING`,
    );
    const postgresVersion = `PostgreSQL ${(await pool.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version}`;

    // S10 uploads megabytes of log lines per second from the 1,000 gateways, far above the production default of 1 MiB per device and day: the most the service allows.
    const logQuota = { LOG_BYTES_PER_DEVICE_PER_DAY: String(2 ** 30) };
    const common = {
      HOST,
      DATABASE_URL: databaseUrl,
      DB_POOL_SIZE: String(POOL_SIZE),
      DEVICE_JWT_SECRET: BENCH_SECRETS.deviceJwtSecret,
      CUSTOMER_JWT_SECRET: BENCH_SECRETS.customerJwtSecret,
      SECRET_PEPPER: BENCH_SECRETS.pepper,
    };
    const start = serviceStart(root);
    const serviceServer = {
      name: 'service',
      script: join(root, 'dist', 'src', 'main.js'),
      // BENCH_SERVICE_NODE_ARGS, e.g. "--heap-growing-percent=50", tries flags on the service alone (the report names them).
      nodeFlags: [...start.nodeFlags, ...nodeFlagsFrom(process.env.BENCH_SERVICE_NODE_ARGS)],
      url: `http://${HOST}:${SERVICE_PORT}`,
      readyPath: '/health/ready',
      logDir: outputDir,
    };
    const historyCache: Record<string, string> = process.env.BENCH_HISTORY_CACHE_MB ? { HISTORY_CACHE_MB: process.env.BENCH_HISTORY_CACHE_MB } : {};
    const serviceEnv = {
      ...start.env,
      ...common,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      PORT: String(SERVICE_PORT),
      DATA_DIR: join(outputDir, 'service-data'),
      // S1, S2 and S5 drive each simulated gateway hundreds of times faster than a real one (bench/README.md).
      TELEMETRY_MAX_REQUESTS_PER_DEVICE: '1000000',
      // The seed's t0 plays "now" for the history (compacted as the job would have at t0) and for
      // ingest (records from t0 on, fresh as a gateway's): a reused seed's t0 may be days before
      // the service's clock, which must neither compact more nor take those records for late ones.
      TELEMETRY_COMPACTION_ENABLED: 'false',
      // BENCH_HISTORY_CACHE_MB sizes the service's history cache for the fleet read (docs/operations.md); the report names it.
      ...historyCache,
      TELEMETRY_SETTLED_HOURS: '8760',
      // The production defaults, said here because the second and third services of S1 and S2 each differ by one of them alone (and their ports).
      ALERTS_ENABLED: 'true',
      BATTERY_ANALYTICS_ENABLED: 'true',
      // Twice the 5 streams per account S6 opens (the production default too): a run's streams whose close the service has not seen yet never make the next run's answer 429.
      STREAM_MAX_PER_USER: '10',
      ...logQuota,
    };
    const devices = devicesOf(options.devices);
    const live = liveDevicesOf();
    const fleet: Fleet = {
      ...fleetOf(devices, customersOf(options.devices), new Date(seed.t0)),
      live: { ...fleetOf(live, viewersOf(), new Date(seed.t0)), clock: new IngestClock(live.length) },
      gateways: { ...fleetOf(gatewaysOf(), operatorsOf(), new Date(seed.t0)), clock: new IngestClock(gatewaysOf().length) },
      // S11's member alone: its 10,000 devices send nothing (their device tokens would take seconds to sign).
      organization: fleetOf([], organizationMembersOf(), new Date(seed.t0)),
    };
    const clock = new IngestClock(devices.length);

    if (options.fleetGateways !== undefined) {
      const metricsPort = SERVICE_PORT + 20;
      // Every gateway registers from this one address, and the second pass retries the first's registrations.
      const fleetSettings = { REGISTRATION_MAX_PER_ADDRESS: '1000000', REGISTRATION_RETRY_WINDOW_SEC: '86400', METRICS_PORT: String(metricsPort) };
      const service = await startServer({ ...serviceServer, env: { ...serviceEnv, ...fleetSettings } });
      servers.push(service);
      const result = await runFleet({ baseUrl: service.url, metricsUrl: `http://${HOST}:${metricsPort}/metrics`, pid: service.pid, gateways: options.fleetGateways, log });
      const defaults = new Env();
      const settings = { DEVICE_CACHE_MAX_ENTRIES: String(defaults.DEVICE_CACHE_MAX_ENTRIES), ACCOUNT_CACHE_MAX_ENTRIES: String(defaults.ACCOUNT_CACHE_MAX_ENTRIES), ...fleetSettings, 'node flags': serviceServer.nodeFlags.join(' ') || 'none' };
      const report = renderFleetReport(machineInfo(), settings, result);
      writeFileSync(join(outputDir, 'fleet-last-run.md'), report);
      writeFileSync(join(outputDir, 'fleet-last-run.json'), JSON.stringify(result, null, 2));
      log(`\n${report}`);
      if (!result.withinBounds) process.exitCode = 1;
      return;
    }

    if (options.downloadGateways !== undefined) {
      const admin = { ADMIN_EMAIL: 'bench-admin@device-cloud.test', ADMIN_PASSWORD: `bench-${BENCH_SECRETS.pepper.slice(0, 24)}` };
      // Its gateways register from this one address; the image is uploaded once.
      const settings = { REGISTRATION_MAX_PER_ADDRESS: '1000000', ...admin };
      const service = await startServer({ ...serviceServer, env: { ...serviceEnv, ...settings } });
      servers.push(service);
      const result = await runDownloads({ baseUrl: service.url, pid: service.pid, postmasterPid, gateways: options.downloadGateways, durationSec: options.durationSec, adminEmail: admin.ADMIN_EMAIL, adminPassword: admin.ADMIN_PASSWORD, log });
      const defaults = new Env();
      const shown = { FIRMWARE_MAX_CONCURRENT_DOWNLOADS: String(defaults.FIRMWARE_MAX_CONCURRENT_DOWNLOADS), FIRMWARE_DOWNLOAD_BYTES_PER_SEC: String(defaults.FIRMWARE_DOWNLOAD_BYTES_PER_SEC), DB_POOL_SIZE: String(POOL_SIZE), 'node flags': serviceServer.nodeFlags.join(' ') || 'none' };
      const report = renderDownloadsReport(machineInfo(), shown, result);
      writeFileSync(join(outputDir, 'downloads-last-run.md'), report);
      writeFileSync(join(outputDir, 'downloads-last-run.json'), JSON.stringify(result, null, 2));
      log(`\n${report}`);
      if (!result.withinBounds) process.exitCode = 1;
      return;
    }

    if (soakSec !== undefined) {
      const eventLoop = new EventLoopLog();
      const service = await startServer({
        ...serviceServer,
        env: { ...serviceEnv, EVENT_LOOP_LOG_MS: String(soakIntervalMs(soakSec)) },
        onStdoutLine: (line) => eventLoop.take(line),
      });
      servers.push(service);
      log(`Service up: pid ${service.pid} on ${service.url}; PostgreSQL postmaster pid ${postmasterPid}. Traffic starts now.`);
      const soakInfo = (): RunInfo => ({ startedAt, finishedAt: new Date(), options, machine: machineInfo(), postgresVersion, poolSize: POOL_SIZE, serviceNodeFlags: serviceServer.nodeFlags, serviceStartEnv: start.env, serviceSettings: historyCache, seed, peakRssExact: true });
      const soakReport = join(outputDir, 'soak-last-run.md');
      const intervals: SoakInterval[] = [];
      writePartialReport = (reason) => {
        if (intervals.length === 0) return;
        const partial: SoakResult = { durationSec: soakSec, intervalSec: soakIntervalMs(soakSec) / 1000, intervals };
        writeFileSync(soakReport, renderSoakReport(soakInfo(), partial, reason));
        log(`Partial soak report of ${intervals.length} intervals written to ${soakReport}`);
      };
      const result = await runSoak({ service, eventLoop, fleet, clock, pool, postmasterPid, durationSec: soakSec, log, onInterval: (interval) => intervals.push(interval) });
      writePartialReport = undefined;
      const info = soakInfo();
      const report = renderSoakReport(info, result);
      writeFileSync(soakReport, report);
      writeFileSync(join(outputDir, 'soak-last-run.json'), JSON.stringify({ info, result }, null, 2));
      log(`\n${report}`);
      log(`Soak report written to ${soakReport}`);
      return;
    }

    // S6 alone measures the service only: no idle baseline beside it.
    const baseline = needsBaseline
      ? await startServer({
          name: 'baseline',
          script: join(root, 'dist', 'bench', 'baseline-server.js'),
          env: { ...common, ...logQuota, PORT: String(BASELINE_PORT) },
          url: `http://${HOST}:${BASELINE_PORT}`,
          readyPath: '/health',
          logDir: outputDir,
        })
      : undefined;
    if (baseline) servers.push(baseline);
    const alertLog = new AlertLog();
    const service = await startServer({ ...serviceServer, env: serviceEnv, onStdoutLine: (line) => alertLog.take(line) });
    servers.push(service);
    // S1 and S2: the same service with one feature off, idle while the others are measured (bench/README.md, "Alerting on and off", "Battery analytics on and off").
    const alertsOffLog = new AlertLog();
    const batteriesOffLog = new AlertLog();
    const startSwitchedOff = async (name: Target, port: number, switchOff: Record<string, string>, alertLogOfIt: AlertLog) => {
      const server = await startServer({
        ...serviceServer,
        name,
        url: `http://${HOST}:${port}`,
        env: { ...serviceEnv, PORT: String(port), ...switchOff },
        onStdoutLine: (line) => alertLogOfIt.take(line),
      });
      servers.push(server);
      return server;
    };
    const serviceAlertsOff = compareAlerting ? await startSwitchedOff('service-alerts-off', SERVICE_ALERTS_OFF_PORT, { ALERTS_ENABLED: 'false' }, alertsOffLog) : undefined;
    const serviceBatteriesOff = compareBatteries
      ? await startSwitchedOff('service-batteries-off', SERVICE_BATTERIES_OFF_PORT, { BATTERY_ANALYTICS_ENABLED: 'false' }, batteriesOffLog)
      : undefined;
    log(
      `Servers up: ${baseline ? `baseline pid ${baseline.pid} on ${baseline.url}, ` : ''}service pid ${service.pid} on ${service.url}` +
        `${serviceAlertsOff ? `, service with ALERTS_ENABLED=false pid ${serviceAlertsOff.pid} on ${serviceAlertsOff.url}` : ''}` +
        `${serviceBatteriesOff ? `, service with BATTERY_ANALYTICS_ENABLED=false pid ${serviceBatteriesOff.pid} on ${serviceBatteriesOff.url}` : ''}; PostgreSQL postmaster pid ${postmasterPid}.`,
    );

    const peakRssExact = resetPeakRss(service.pid);
    const context = {
      fleet,
      clock,
      pool,
      postmasterPid,
      warmupSec: options.warmupSec,
      durationSec: options.durationSec,
      serverPids: servers.map((server) => server.pid),
    };
    const runs: RunResult[] = [];
    const infoNow = (): RunInfo => ({ startedAt, finishedAt: new Date(), options, machine: machineInfo(), postgresVersion, poolSize: POOL_SIZE, serviceNodeFlags: serviceServer.nodeFlags, serviceStartEnv: start.env, serviceSettings: historyCache, seed, peakRssExact });
    writePartialReport = (reason) => {
      if (runs.length === 0) return;
      const report = `> **Incomplete run** (${reason}): ${runs.length} of ${runsPerRound * options.rounds} runs finished.\n\n${renderReport(infoNow(), summarize(variants, runs), runs)}`;
      writeFileSync(join(outputDir, 'last-run.md'), report);
      log(`Partial report of ${runs.length} runs written to ${join(outputDir, 'last-run.md')}`);
    };
    const serverOf: Record<Target, ServerProcess | undefined> = {
      baseline,
      service,
      'service-alerts-off': serviceAlertsOff,
      'service-batteries-off': serviceBatteriesOff,
      'service-streams': service,
      'service-long-polls': service,
    };
    const alertLogOf: Record<Target, AlertLog | undefined> = {
      baseline: undefined,
      service: alertLog,
      'service-alerts-off': alertsOffLog,
      'service-batteries-off': batteriesOffLog,
      'service-streams': alertLog,
      'service-long-polls': alertLog,
    };
    for (let round = 1; round <= options.rounds; round++) {
      for (const variant of variants) {
        for (const target of targetsOf(variant, round)) {
          const server = serverOf[target];
          if (!server) throw new Error(`no ${target} server was started`);
          const targetLog = alertLogOf[target];
          const run = await runVariant(variant, server, target, round, context, targetLog ? () => targetLog.snapshot() : undefined);
          runs.push(run);
          writeFileSync(join(outputDir, 'last-run.json'), JSON.stringify({ options, seed, runs }, null, 2));
          const head = run.loads[0];
          const extra = run.loads
            .slice(1)
            .map((load) => `; ${load.name} ${Math.round(load.rps)} req/s p99 ${load.p99Ms} ms non-2xx ${load.non2xx}`)
            .join('');
          const integrity = head.integrity ? ` stored=acked ${head.integrity.ok ? 'yes' : 'NO'} (${head.integrity.stored}/${head.integrity.acknowledged}+${head.integrity.committedUnanswered})` : '';
          const streams = run.streams
            ? `; streams ${run.streams.streams} open (${run.streams.refused} refused, ${run.streams.closedByServer} closed by the service), ${Math.round(run.streams.eventsPerSec)} events/s received, ` +
              `push p50 ${run.streams.pushP50Ms} p99 ${run.streams.pushP99Ms} ms (${run.streams.deliveriesReceived}/${run.streams.deliveriesExpected} probe deliveries), stream client CPU µs/req ${Math.round(run.streams.clientCpuUsPerRequest)}`
            : '';
          const longPolls = run.longPolls
            ? `; long polls ${run.longPolls.heldAtOpen} held once opened (${run.longPolls.held} at the measured start), RSS ${Math.round(run.longPolls.rssBeforeOpenMb)} → ${Math.round(run.longPolls.rssWaitingMb)} MB while they wait, ${run.longPolls.commands} commands (${run.longPolls.sendFailures} refused): ` +
              `delivered p50 ${run.longPolls.deliveryP50Ms} p99 ${run.longPolls.deliveryP99Ms} ms, answered p50 ${run.longPolls.answerP50Ms} p99 ${run.longPolls.answerP99Ms} ms (${run.longPolls.answers}/${run.longPolls.commands - run.longPolls.sendFailures}); ` +
              `polls 200/304/errors ${run.longPolls.polls200}/${run.longPolls.polls304}/${run.longPolls.pollErrors} (${run.longPolls.early304} early 304s), long-poll client CPU µs/req ${Math.round(run.longPolls.clientCpuUsPerRequest)}`
            : '';
          const alerting = run.alerting
            ? `; alerts opened ${run.alerting.opened} resolved ${run.alerting.resolved}, series at end ${run.alerting.seriesAtEnd}, flushes not evaluated ${run.alerting.skippedFlushes + run.alerting.failedFlushes}`
            : '';
          log(
            `[round ${round} ${variant.id} ${target}] ${Math.round(head.rps)} req/s p50 ${head.p50Ms} p99 ${head.p99Ms} ms non-2xx ${head.non2xx} errors ${head.errors}; ` +
              `CPU µs/req server ${Math.round(run.serverCpuUsPerRequest)} PostgreSQL ${Math.round(run.postgresCpuUsPerRequest)}; peak RSS ${Math.round(run.peakRssMb)} MB; other CPU ${(run.otherCpuShare * 100).toFixed(1)} %, idle servers ${(run.idleServersCpuShare * 100).toFixed(1)} %; ` +
              `after the load ${run.afterLoad.seconds.toFixed(1)} s${run.afterLoad.quiet ? '' : ' (not quiet)'}, CPU µs/req server ${Math.round(run.afterLoad.serverCpuUsPerRequest)} PostgreSQL ${Math.round(run.afterLoad.postgresCpuUsPerRequest)}${integrity}${alerting}${streams}${longPolls}${extra}`,
          );
        }
      }
    }

    writePartialReport = undefined;
    const info = infoNow();
    const report = renderReport(info, summarize(variants, runs), runs);
    writeFileSync(join(outputDir, 'last-run.md'), report);
    writeFileSync(join(outputDir, 'last-run.json'), JSON.stringify({ info, runs }, null, 2));
    log(`\n${report}`);
    log(`Report written to ${join(outputDir, 'last-run.md')}`);
  } finally {
    writePartialReport?.('stopped by an error');
    await cleanup();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    log(`\n${signal}: stopping the servers and PostgreSQL…`);
    try {
      writePartialReport?.(`stopped by ${signal}`);
    } catch {
      // the report is a courtesy; stopping matters more
    }
    killAllChildrenNow();
    void (cleanup?.() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}
process.on('exit', killAllChildrenNow);

main().then(
  // process.exitCode when a mode set it (bounds not met), 0 otherwise.
  () => process.exit(),
  (error: unknown) => {
    process.stderr.write(`Benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
